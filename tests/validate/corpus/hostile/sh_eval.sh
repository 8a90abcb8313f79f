# expect: SH-EVAL
cmd='ls -la'
eval "$cmd"
