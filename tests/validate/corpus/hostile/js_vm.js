// expect: JS-EVAL
const vm = require('vm');
vm.runInNewContext('1 + 1');
