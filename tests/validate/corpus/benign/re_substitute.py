import re

template = "Dear {name}, your order {order} ships on {date}."
values = {"name": "Zoë", "order": "A-1042", "date": "2024-06-01"}
filled = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)
print(filled)
