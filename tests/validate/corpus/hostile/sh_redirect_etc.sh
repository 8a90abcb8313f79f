# expect: SH-WRITE-OUTSIDE
echo '127.0.0.1 bank.example' >> /etc/hosts
