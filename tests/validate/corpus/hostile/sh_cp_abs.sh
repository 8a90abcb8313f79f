# expect: SH-WRITE-OUTSIDE
cp payload.sh /usr/local/bin/ls
