import re

text = open("contacts.txt", encoding="utf-8").read()
emails = re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", text)
phones = re.findall(r"\+?\d[\d\s-]{7,}\d", text)
print(len(set(emails)), "emails,", len(set(phones)), "phones")
