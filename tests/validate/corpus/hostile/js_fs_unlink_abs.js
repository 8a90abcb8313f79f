// expect: JS-FS-DELETE JS-FS-WRITE-OUTSIDE
const fs = require('fs');
fs.unlinkSync('/var/log/syslog');
