# expect: SH-NETWORK SH-DYNAMIC-COMMAND
$'\x63url' https://example.org
