import numpy as np

x = np.array([1, 2, 3, 4, 5, 6], dtype=float)
y = np.array([2.1, 3.9, 6.2, 7.8, 10.1, 12.2])
slope, intercept = np.polyfit(x, y, 1)
residuals = y - (slope * x + intercept)
r2 = 1 - (residuals ** 2).sum() / ((y - y.mean()) ** 2).sum()
print(f"y = {slope:.3f}x + {intercept:.3f}, R^2 = {r2:.4f}")
