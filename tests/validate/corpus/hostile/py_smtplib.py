# expect: PY-IMPORT-NETWORK
import smtplib
smtplib.SMTP('mail.example.org').sendmail('a@b', ['c@d'], 'hi')
