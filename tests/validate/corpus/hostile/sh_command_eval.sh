# expect: SH-EVAL
command eval "$(printf ls)"
