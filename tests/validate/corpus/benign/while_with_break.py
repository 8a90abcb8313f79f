import random

random.seed(1)
tries = 0
while True:
    tries += 1
    if random.random() > 0.95:
        break
print("took", tries, "tries")
