const rows = [
  ['fruit', 'apple'], ['veg', 'kale'], ['fruit', 'pear'], ['nut', 'pecan'],
];
const groups = rows.reduce((acc, [k, v]) => {
  (acc[k] ||= []).push(v);
  return acc;
}, {});
console.log(JSON.stringify(groups));
