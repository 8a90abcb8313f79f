import json

REQUIRED = {"id": int, "name": str, "tags": list}

def problems(item):
    for key, kind in REQUIRED.items():
        if key not in item:
            yield f"missing {key}"
        elif not isinstance(item[key], kind):
            yield f"{key} should be {kind.__name__}"

items = json.load(open("items.json"))
for i, item in enumerate(items):
    for p in problems(item):
        print(i, p)
