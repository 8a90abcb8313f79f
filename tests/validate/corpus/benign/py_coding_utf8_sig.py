# This Python file uses the following encoding: utf-8-sig
"""PEP 263's own wording, with Python's name for UTF-8 with a BOM."""
print(max([3, 1, 2]))
