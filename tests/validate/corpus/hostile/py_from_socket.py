# expect: PY-IMPORT-NETWORK
from socket import create_connection
create_connection(('example.org', 443))
