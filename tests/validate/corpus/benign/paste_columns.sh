paste -d, ids.txt names.txt scores.txt > table.csv
head -3 table.csv
