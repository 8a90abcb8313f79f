# expect: SH-DISK
command dd if=/dev/zero of=disk.img bs=1M count=1
