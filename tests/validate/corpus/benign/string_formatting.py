rows = [("Zürich", 421_878), ("Genève", 203_856), ("東京", 13_960_000)]
width = max(len(city) for city, _ in rows)
for city, population in rows:
    print(f"{city:<{width}} {population:>12,}")
