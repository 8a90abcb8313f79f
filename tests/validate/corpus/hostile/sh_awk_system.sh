# expect: SH-REACH-PROGRAM verdict=warn
awk 'BEGIN { system("id") }'
