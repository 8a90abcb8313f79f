sort -k1,1 names.txt > names.sorted
sort -k1,1 ages.txt > ages.sorted
join names.sorted ages.sorted > people.txt
cat people.txt
