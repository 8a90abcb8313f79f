// expect: JS-CHILD-PROCESS JS-DYNAMIC-REQUIRE
const m = require('child_' + 'process');
m.execSync('id');
