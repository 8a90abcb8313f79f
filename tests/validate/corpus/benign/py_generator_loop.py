# A generator's endless loop yields: it is bounded by its consumer (issue
# 10: this was warned as PY-LOOP-UNBOUNDED).
import itertools


def fib():
    a, b = 0, 1
    while True:
        yield a
        a, b = b, a + b


print(list(itertools.islice(fib(), 10)))
