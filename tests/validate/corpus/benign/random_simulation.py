import random
import statistics

random.seed(7)
def simulate(n):
    wins = 0
    for _ in range(n):
        doors = [0, 0, 1]
        random.shuffle(doors)
        wins += doors[random.randrange(3)]
    return wins / n
results = [simulate(1000) for _ in range(20)]
print(round(statistics.mean(results), 3))
