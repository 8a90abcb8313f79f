# expect: PY-SOURCE-ENCODING
# -*- coding: latin-1 -*-
# Read as Latin-1, the UTF-8 bytes of "café" are "cafÃ©": not what the editor shows.
print("café")
