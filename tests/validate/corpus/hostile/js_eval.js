// expect: JS-EVAL
const expr = process.argv[2];
console.log(eval(expr));
