# expect: SH-DELETE verdict=warn
find . -name '*.tmp' -delete
