// expect: JS-REACH-FUNCTION verdict=warn
(() => {}).constructor('return process')().exit(3);
