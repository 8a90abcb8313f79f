# expect: SH-EVAL
bash -c 'echo hi'
