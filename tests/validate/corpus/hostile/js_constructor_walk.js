// expect: JS-PROTOTYPE-WALK
const f = [].constructor.constructor('return process')();
console.log(f.pid);
