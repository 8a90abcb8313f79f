# expect: PY-SOURCE-ENCODING
# coding=utf-7 (CPython reads the first declaration, not the next) coding: utf-8
# totals +AAo-import os+ADs-print(os.listdir(+ACI-/+ACI-))
print(1)
