const values = [12, 7, 3, 21, 8, 14, 9];
const mean = values.reduce((a, b) => a + b, 0) / values.length;
const sorted = [...values].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)];
const sd = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1));
console.log({ mean, median, sd: sd.toFixed(3) });
