# expect: PY-IMPORT-NETWORK
import http.client
c = http.client.HTTPSConnection('example.org')
c.request('GET', '/')
