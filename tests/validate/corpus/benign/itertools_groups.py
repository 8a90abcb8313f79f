from itertools import groupby
from operator import itemgetter

rows = [("fruit", "apple"), ("fruit", "pear"), ("veg", "kale"), ("veg", "leek"), ("nut", "pecan")]
for kind, group in groupby(sorted(rows), key=itemgetter(0)):
    print(kind, [name for _, name in group])
