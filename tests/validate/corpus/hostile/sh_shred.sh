# expect: SH-DISK
shred -u secrets.txt
