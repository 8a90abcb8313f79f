stamp=$(date +%Y-%m-%d)
echo "report for $stamp" > "report-$stamp.txt"
cat "report-$stamp.txt"
