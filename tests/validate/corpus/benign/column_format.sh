printf 'name,score\nana,91\nbo,78\n' > scores.csv
column -t -s, scores.csv
