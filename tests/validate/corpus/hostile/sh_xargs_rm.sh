# expect: SH-DELETE
find . -name '*.csv' | xargs rm -f
