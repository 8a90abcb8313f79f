# expect: SH-NETWORK SH-WRITE-OUTSIDE
exec 3<>/dev/tcp/10.0.0.1/80
echo -e 'GET / HTTP/1.0\n' > /dev/tcp/10.0.0.1/80
