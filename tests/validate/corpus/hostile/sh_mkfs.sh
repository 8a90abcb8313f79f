# expect: SH-DISK
mkfs.ext4 /dev/sdb1
