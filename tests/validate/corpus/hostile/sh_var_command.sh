# expect: SH-NETWORK SH-DYNAMIC-COMMAND
t=wget
$t https://example.org/x
