grep -c ERROR app.log
grep -E 'WARN|ERROR' app.log | cut -d' ' -f1 | sort | uniq -c | sort -rn > levels.txt
