# expect: SH-REACH-COMMAND verdict=warn
lsof -i
