const amounts = [1234.5, 99.99, 1e6];
const fmt = new Intl.NumberFormat('de-CH', { style: 'currency', currency: 'CHF' });
amounts.forEach((a) => console.log(fmt.format(a)));
