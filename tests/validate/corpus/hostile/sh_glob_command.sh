# expect: SH-DYNAMIC-COMMAND
/usr/bin/c?rl https://example.org
