const text = 'the quick brown fox jumps over the lazy dog the end';
const hist = text.split(' ').reduce((m, w) => m.set(w, (m.get(w) || 0) + 1), new Map());
console.log([...hist].sort((x, y) => y[1] - x[1]).slice(0, 3));
