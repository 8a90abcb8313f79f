// expect: JS-EVAL
setTimeout('console.log(1)', 10);
