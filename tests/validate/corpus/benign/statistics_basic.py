import statistics

scores = [72, 85, 90, 66, 85, 93, 78, 85, 70, 88]
print("mean", statistics.mean(scores))
print("median", statistics.median(scores))
print("mode", statistics.mode(scores))
print("stdev", round(statistics.stdev(scores), 2))
print("quartiles", statistics.quantiles(scores, n=4))
