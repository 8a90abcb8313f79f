from datetime import date, timedelta

start = date(2024, 1, 1)
end = date(2024, 3, 31)
day = start
weekdays = 0
while day <= end:
    if day.weekday() < 5:
        weekdays += 1
    day += timedelta(days=1)
print("working days in Q1:", weekdays)
