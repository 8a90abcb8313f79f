// expect: JS-DYNAMIC-REQUIRE
const name = process.argv[2];
const m = require(name);
