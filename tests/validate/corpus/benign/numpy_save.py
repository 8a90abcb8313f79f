import numpy as np

grid = np.linspace(0, 1, 101)
values = np.sin(2 * np.pi * grid) ** 2
np.save("results/values.npy", values)
np.savetxt("results/values.txt", np.column_stack([grid, values]), fmt="%.5f")
loaded = np.load("results/values.npy")
print(np.allclose(loaded, values))
