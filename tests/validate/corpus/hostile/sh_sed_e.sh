# expect: SH-REACH-PROGRAM verdict=warn
sed 's/.*/id/e' notes.txt
