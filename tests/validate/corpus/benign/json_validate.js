const fs = require('fs');
const data = JSON.parse(fs.readFileSync('items.json', 'utf8'));
const bad = data.filter((d) => typeof d.id !== 'number' || !Array.isArray(d.tags));
console.log(`${bad.length} of ${data.length} items are malformed`);
