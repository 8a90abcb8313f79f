const fsp = require('fs/promises');

async function main() {
  const names = await fsp.readdir('data');
  const sizes = await Promise.all(names.map(async (n) => (await fsp.stat(`data/${n}`)).size));
  names.forEach((n, i) => console.log(n, sizes[i]));
  await fsp.writeFile('sizes.txt', sizes.join('\n'));
}
main();
