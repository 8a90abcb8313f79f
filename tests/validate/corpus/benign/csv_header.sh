head -1 data.csv | tr ',' '\n' | nl
