def first_square_over(n):
    i = 0
    while True:
        i += 1
        if i * i > n:
            return i

print(first_square_over(1000))
