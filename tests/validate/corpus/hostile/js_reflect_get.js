// expect: JS-REACH-COMPUTED verdict=warn
const name = 'getBuiltin' + process.argv[2];
Reflect.get(process, name);
