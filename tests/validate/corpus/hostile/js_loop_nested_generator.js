// expect: JS-LOOP-UNBOUNDED verdict=warn
// The yield belongs to a generator defined inside the loop, not the loop.
while (true) {
  const g = function* () { yield 1; };
}
