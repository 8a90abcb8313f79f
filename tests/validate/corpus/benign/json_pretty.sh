python3 -m json.tool data.json > pretty.json
head -5 pretty.json
