# expect: SH-REACH-COMMAND verdict=warn
xargs -0 python3 <files.txt
