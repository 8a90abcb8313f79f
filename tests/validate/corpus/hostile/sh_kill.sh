# expect: SH-PROCESS
kill -9 1
