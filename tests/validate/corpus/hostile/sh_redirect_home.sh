# expect: SH-WRITE-OUTSIDE
echo 'alias ls=rm' >> ~/.bashrc
