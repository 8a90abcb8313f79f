# expect: SH-DELETE
rm -r build
