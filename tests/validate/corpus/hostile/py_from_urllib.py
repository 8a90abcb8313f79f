# expect: PY-IMPORT-NETWORK
from urllib.request import urlopen
print(urlopen('http://x').status)
