// expect: JS-REACH-MODULE verdict=warn
const shell = require('shelljs');
shell.exec('id');
