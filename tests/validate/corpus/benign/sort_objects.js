const people = [
  { name: 'Ada', born: 1815 }, { name: 'Grace', born: 1906 }, { name: 'Alan', born: 1912 },
];
people.sort((a, b) => a.born - b.born || a.name.localeCompare(b.name));
for (const p of people) console.log(`${p.name.padEnd(6)} ${p.born}`);
