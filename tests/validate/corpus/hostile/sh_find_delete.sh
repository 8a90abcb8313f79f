# expect: SH-DELETE
find . -name '*.tmp' -delete
