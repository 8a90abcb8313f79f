// expect: JS-DYNAMIC-REQUIRE
const m = process.getBuiltinModule(['child', 'process'].join(process.env.SEP));
