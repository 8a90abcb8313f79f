matrix = [[i * j for j in range(1, 6)] for i in range(1, 6)]
transpose = [list(row) for row in zip(*matrix)]
diag = [matrix[i][i] for i in range(len(matrix))]
evens = {x for row in matrix for x in row if x % 2 == 0}
print(diag, len(evens), transpose[0])
