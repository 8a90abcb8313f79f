// expect: JS-EVAL
const f = new Function('a', 'return a * 2');
console.log(f(2));
