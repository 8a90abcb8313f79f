# -*- coding: utf-8 -*-
"""Totals per month, a file that declares its encoding as editors write it."""
print(sum([1, 2, 3]))
