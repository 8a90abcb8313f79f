# expect: SH-NETWORK
ssh user@host 'cat /etc/shadow'
