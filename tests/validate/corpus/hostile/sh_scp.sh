# expect: SH-NETWORK
scp secrets.txt user@host:/tmp/
