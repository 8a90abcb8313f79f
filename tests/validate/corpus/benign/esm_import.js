import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const input = path.join('data', 'words.txt');
const words = readFileSync(input, 'utf8').split(/\s+/).filter(Boolean);
const longest = words.reduce((a, w) => (w.length > a.length ? w : a), '');
writeFileSync('longest.txt', longest);
console.log(longest);
