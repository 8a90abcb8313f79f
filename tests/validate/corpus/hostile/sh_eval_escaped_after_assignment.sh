# expect: SH-EVAL
x=1
\eval "$(printf ls)"
