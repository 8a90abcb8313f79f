# expect: PY-IMPORT-NETWORK
import webbrowser
webbrowser.open('http://example.org')
