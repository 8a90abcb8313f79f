import matplotlib.pyplot as plt
import csv

xs, ys, labels = [], [], []
with open("points.csv", newline="") as f:
    for row in csv.DictReader(f):
        xs.append(float(row["x"]))
        ys.append(float(row["y"]))
        labels.append(row["label"])
plt.scatter(xs, ys)
for x, y, label in zip(xs, ys, labels):
    plt.annotate(label, (x, y))
plt.savefig("scatter.svg")
