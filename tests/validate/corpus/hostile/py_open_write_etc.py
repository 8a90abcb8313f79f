# expect: PY-FILE-WRITE-OUTSIDE
with open('/etc/cron.d/job', 'w') as f:
    f.write('* * * * * root id\n')
