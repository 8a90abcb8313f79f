const fs = require('fs');
const path = require('path');
fs.mkdirSync('out', { recursive: true });
for (const name of ['a', 'b']) {
  fs.writeFileSync(path.join('out', `${name}.txt`), name.toUpperCase());
}
console.log(fs.readdirSync('out'));
