# -*- coding: utf-7 -*- (the first line's declaration) expect: PY-SOURCE-ENCODING
# totals +AAo-import os+ADs-print(os.listdir(+ACI-/+ACI-))
print(1)
