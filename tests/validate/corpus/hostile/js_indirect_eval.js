// expect: JS-EVAL
const r = (0, eval)("process.pid");
