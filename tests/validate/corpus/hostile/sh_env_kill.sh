# expect: SH-PROCESS
env kill -9 1
