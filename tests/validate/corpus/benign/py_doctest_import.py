# __import__ of a constant module name is an import (issue 10: this was
# denied as PY-DYNAMIC-CODE).
def double(x):
    """
    >>> double(2)
    4
    """
    return 2 * x


if __name__ == "__main__":
    __import__("doctest").testmod()
