const path = require('node:path');
const { readFileSync } = require('fs');
import('node:util').then((u) => console.log(u.format('%d', 1)));
const text = readFileSync(path.join(process.cwd(), 'data.txt'), 'utf8');
process.stdout.write(text.length + '\n');
if (process.argv.length > 2) process.exitCode = 1;
