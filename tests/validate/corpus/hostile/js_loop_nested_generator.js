// expect: JS-LOOP-UNBOUNDED
// The yield belongs to a generator defined inside the loop, not the loop.
while (true) {
  const g = function* () { yield 1; };
}
