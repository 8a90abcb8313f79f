awk -F, 'NR > 1 { total[$1] += $3 } END { for (k in total) print k, total[k] }' sales.csv | sort
