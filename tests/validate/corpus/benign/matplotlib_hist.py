import matplotlib.pyplot as plt
import numpy as np

data = np.loadtxt("latencies.txt")
plt.hist(data, bins=50, color="steelblue", edgecolor="white")
plt.axvline(np.median(data), color="red", linestyle="--", label="median")
plt.title("Request latency (ms)")
plt.legend()
plt.savefig("plots/latency_hist.png")
plt.close()
