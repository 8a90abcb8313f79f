# expect: SH-EVAL
ev\
al "$(printf ls)"
