# expect: PY-IMPORT-NETWORK
from ftplib import FTP
ftp = FTP('ftp.example.org')
ftp.login()
