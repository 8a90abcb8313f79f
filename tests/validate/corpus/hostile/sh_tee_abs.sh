# expect: SH-WRITE-OUTSIDE
echo 'x' | tee /etc/profile.d/x.sh
