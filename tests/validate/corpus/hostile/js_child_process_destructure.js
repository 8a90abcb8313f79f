// expect: JS-CHILD-PROCESS
const { exec } = require('node:child_process');
exec('ls', (e, out) => console.log(out));
