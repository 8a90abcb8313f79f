# expect: SH-DYNAMIC-COMMAND
$(echo rm) -rf data
