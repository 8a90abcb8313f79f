// expect: JS-FS-DELETE
const fs = require('fs');
fs.rmSync('data', { recursive: true, force: true });
