# expect: SH-DELETE SH-WRITE-OUTSIDE
rm -rf / --no-preserve-root
