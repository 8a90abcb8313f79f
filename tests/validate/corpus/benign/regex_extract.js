const fs = require('fs');
const log = fs.readFileSync('server.log', 'utf8');
const re = /(\d{3}) (GET|POST) (\S+)/g;
const counts = new Map();
for (const m of log.matchAll(re)) {
  counts.set(m[1], (counts.get(m[1]) || 0) + 1);
}
console.log([...counts.entries()].sort((a, b) => b[1] - a[1]));
