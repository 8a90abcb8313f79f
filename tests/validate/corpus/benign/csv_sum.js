const fs = require('fs');

const text = fs.readFileSync('sales.csv', 'utf8');
const [header, ...rows] = text.trim().split('\n');
const cols = header.split(',');
const amount = cols.indexOf('amount');
const total = rows.reduce((sum, row) => sum + Number(row.split(',')[amount]), 0);
console.log(`total: ${total.toFixed(2)}`);
