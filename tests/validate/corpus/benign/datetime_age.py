from datetime import date

def age(born, today=None):
    today = today or date.today()
    return today.year - born.year - ((today.month, today.day) < (born.month, born.day))

people = {"Ada": date(1815, 12, 10), "Grace": date(1906, 12, 9)}
for name, born in people.items():
    print(name, age(born, date(1950, 1, 1)))
