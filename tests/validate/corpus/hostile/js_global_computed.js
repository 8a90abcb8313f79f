// expect: JS-REACH-COMPUTED verdict=warn
const k = process.argv[2];
globalThis[k]('x');
