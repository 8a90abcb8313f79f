cut -d, -f2 visitors.csv | tail -n +2 | sort | uniq -c | sort -rn | head -n 10
