n=5
total=0
for ((i = 0; i < n; i++)); do
  total=$((total + i))
done
count=0
for k in 1 2 3; do (( count += k )); done
words=(a b c)
echo "${#words[@]} ${words[count % 3]}"
for j in "${!words[@]}"; do echo "$j ${words[$j]}"; done
show() { printf "%d\n" "$1"; }
show "$total"
if [[ $total -gt 3 ]]; then echo big; fi
ls *.txt | xargs wc -l | sort -n
