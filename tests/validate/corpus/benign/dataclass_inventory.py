from dataclasses import dataclass, field

@dataclass
class Item:
    name: str
    price: float
    tags: list = field(default_factory=list)

items = [Item("pen", 1.5, ["office"]), Item("mug", 7.0), Item("lamp", 23.9, ["home"])]
total = sum(i.price for i in items)
print(f"{len(items)} items, total {total:.2f}")
print(max(items, key=lambda i: i.price))
