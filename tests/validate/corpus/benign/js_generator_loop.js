// A generator's endless loop yields (issue 10: this was warned as
// JS-LOOP-UNBOUNDED).
function* fib() {
  let [a, b] = [0, 1];
  while (true) {
    yield b;
    [a, b] = [b, a + b];
  }
}
const it = fib();
for (let i = 0; i < 10; i++) console.log(it.next().value);
