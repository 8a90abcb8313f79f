# expect: SH-NETWORK
/usr/bin/curl https://example.org
