# expect: SH-REACH-INTERPRETER verdict=warn
# python3 -m json.tool is harmless, but kiln cannot see what python3 runs: a warning, not allow.
python3 -m json.tool data.json > pretty.json
head -5 pretty.json
