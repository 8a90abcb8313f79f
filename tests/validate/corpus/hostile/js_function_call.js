// expect: JS-EVAL
Function('return this')().process.exit(1);
