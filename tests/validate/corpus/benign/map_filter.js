const products = [
  { name: 'pen', price: 1.5, stock: 10 },
  { name: 'mug', price: 7, stock: 0 },
  { name: 'lamp', price: 23.9, stock: 3 },
];
const available = products.filter((p) => p.stock > 0).map((p) => `${p.name} (${p.price})`);
console.log(available);
