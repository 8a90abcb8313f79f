// expect: JS-EVAL
// eval as a value, its first letter an escape: the name is read decoded,
// by the gate that looks at its first bytes too.
const fns = [\u0065val];
console.log(fns[0]('1 + 1'));
