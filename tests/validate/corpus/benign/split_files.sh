mkdir -p parts
split -l 1000 big.csv parts/chunk_
ls parts | wc -l
