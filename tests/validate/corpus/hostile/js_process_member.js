// expect: JS-REACH-PROCESS verdict=warn
process.openStdin();
