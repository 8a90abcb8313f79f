// expect: JS-FS-DELETE verdict=warn
const fs = require('fs');
fs.rmSync('data', { recursive: true, force: true });
