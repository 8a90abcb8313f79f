const fs = require('node:fs');

const users = JSON.parse(fs.readFileSync('users.json', 'utf8'));
const byCountry = {};
for (const u of users) {
  byCountry[u.country] = (byCountry[u.country] || 0) + 1;
}
fs.writeFileSync('by_country.json', JSON.stringify(byCountry, null, 2));
console.log(Object.keys(byCountry).length, 'countries');
