// expect: JS-CHILD-PROCESS JS-DYNAMIC-REQUIRE
const m = require(['child', 'process'].join('_'));
m.exec('id');
