const calc = { eval: (s) => s.length };
console.log(calc.eval("abc"));
