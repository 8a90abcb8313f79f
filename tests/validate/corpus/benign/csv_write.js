const fs = require('fs');
const rows = [['name', 'score'], ['ana', 91], ['bo', 78]];
const csv = rows.map((r) => r.join(',')).join('\n') + '\n';
fs.writeFileSync('scores.csv', csv);
fs.appendFileSync('scores.csv', 'chen,85\n');
console.log(fs.readFileSync('scores.csv', 'utf8'));
