const start = new Date('2024-01-01T00:00:00Z');
const days = [];
for (let i = 0; i < 7; i++) {
  const d = new Date(start.getTime() + i * 86400000);
  days.push(d.toISOString().slice(0, 10));
}
console.log(days.join(', '));
