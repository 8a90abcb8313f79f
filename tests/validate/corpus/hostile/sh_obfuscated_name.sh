# expect: SH-NETWORK SH-DYNAMIC-COMMAND
c""url https://example.org
