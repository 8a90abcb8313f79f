import json

with open("config.json") as f:
    config = json.load(f)
config.setdefault("retries", 3)
config["thresholds"] = sorted(set(config.get("thresholds", [])))
with open("config.normalized.json", "w") as f:
    json.dump(config, f, indent=2, sort_keys=True)
