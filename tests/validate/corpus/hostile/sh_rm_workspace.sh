# expect: SH-DELETE verdict=warn
rm -r build
