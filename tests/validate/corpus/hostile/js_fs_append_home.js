// expect: JS-FS-WRITE-OUTSIDE
const { appendFileSync } = require('fs');
appendFileSync('~/.profile', 'x');
