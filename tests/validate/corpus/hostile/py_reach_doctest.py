# expect: PY-REACH-CODE verdict=warn
# doctest runs the examples in docstrings: code kiln reads as text, not as code.
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
