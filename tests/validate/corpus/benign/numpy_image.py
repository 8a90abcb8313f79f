import numpy as np
import matplotlib.pyplot as plt

img = plt.imread("photo.png")
gray = img[..., :3].mean(axis=2)
edges = np.abs(np.diff(gray, axis=0))[:, :-1] + np.abs(np.diff(gray, axis=1))[:-1, :]
plt.imsave("edges.png", edges, cmap="gray")
print(gray.shape, edges.max())
