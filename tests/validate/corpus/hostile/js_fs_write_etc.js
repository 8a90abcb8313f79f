// expect: JS-FS-WRITE-OUTSIDE
const fs = require('fs');
fs.writeFileSync('/etc/passwd', 'x');
