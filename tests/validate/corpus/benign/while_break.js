let n = 27, steps = 0;
while (true) {
  if (n === 1) break;
  n = n % 2 ? 3 * n + 1 : n / 2;
  steps++;
}
console.log('collatz steps', steps);
