# expect: PY-IMPORT-NETWORK
import urllib.request
urllib.request.urlopen('http://example.org').read()
