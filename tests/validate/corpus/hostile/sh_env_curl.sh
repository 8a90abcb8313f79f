# expect: SH-NETWORK
env curl https://example.org
