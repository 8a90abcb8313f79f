# expect: SH-DELETE SH-WRITE-OUTSIDE
rm -rf ~/Documents
