grep -o '"status": *"[a-z]*"' responses.json | sed 's/.*"\([a-z]*\)"$/\1/' | sort | uniq -c
