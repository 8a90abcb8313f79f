// expect: JS-PROCESS-CONTROL
process.kill(1, 'SIGKILL');
