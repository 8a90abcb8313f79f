const os = require('os');
const path = require('path');

console.log('cpus:', os.cpus().length, 'platform:', os.platform());
console.log(path.resolve('data', 'input.csv'));
console.log(path.extname('report.final.pdf'));
