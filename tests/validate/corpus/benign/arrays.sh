fruits=(apple banana cherry)
for i in "${!fruits[@]}"; do
  echo "$i: ${fruits[$i]}"
done
echo "count: ${#fruits[@]}"
