# expect: SH-REACH-PROGRAM verdict=warn
find . -name '*.txt' -exec id {} +
