import numpy as np

a = np.array([[3.0, 2.0, -1.0], [2.0, -2.0, 4.0], [-1.0, 0.5, -1.0]])
b = np.array([1.0, -2.0, 0.0])
x = np.linalg.solve(a, b)
print("solution", x)
print("check", np.allclose(a @ x, b))
w, v = np.linalg.eig(a)
print("eigenvalues", w)
