const n = 4;
const m = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => i * n + j));
const t = m[0].map((_, j) => m.map((row) => row[j]));
console.table(t);
