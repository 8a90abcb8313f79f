# -*- coding: utf-8 -*-
données = {"café": 3, "naïve": 1, "日本": 2, "🙂": 5}
total = sum(données.values())
for clé, valeur in données.items():
    print(f"{clé}: {valeur / total:.1%}")
