# expect: SH-DELETE verdict=warn
find . -name '*.csv' | xargs rm -f
