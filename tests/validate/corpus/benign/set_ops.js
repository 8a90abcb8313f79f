const a = new Set([1, 2, 3, 4]);
const b = new Set([3, 4, 5]);
const union = new Set([...a, ...b]);
const inter = [...a].filter((x) => b.has(x));
const diff = [...a].filter((x) => !b.has(x));
console.log({ union: [...union], inter, diff });
