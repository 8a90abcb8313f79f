# expect: SH-DISK SH-WRITE-OUTSIDE
dd if=/dev/zero of=/dev/sda bs=1M
