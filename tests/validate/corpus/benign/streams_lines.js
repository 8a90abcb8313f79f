const fs = require('fs');
const readline = require('readline');

const rl = readline.createInterface({ input: fs.createReadStream('big.txt') });
let lines = 0;
rl.on('line', () => { lines++; });
rl.on('close', () => console.log('lines:', lines));
