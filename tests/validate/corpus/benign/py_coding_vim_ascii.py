#!/usr/bin/env python3
# vim: set fileencoding=ascii :
"""Counts per key, declared as vim writes it."""
counts = {"a": 1, "b": 2}
print(sorted(counts.items()))
