# expect: SH-NETWORK
cu\
rl https://example.org
