# expect: PY-SOURCE-ENCODING
# -*- coding: utf-7 -*-
# totals +AAo-import os+ADs-os.system(+ACI-id+ACI-)
print(1)
