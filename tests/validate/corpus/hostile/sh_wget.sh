# expect: SH-NETWORK
wget -q -O data.csv https://example.org/data.csv
