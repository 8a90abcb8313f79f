mkdir -p out
for f in in/*.txt; do
  base=$(basename "$f" .txt)
  tr '[:lower:]' '[:upper:]' < "$f" > "out/$base.upper.txt"
done
ls out
