// expect: JS-LOOP-UNBOUNDED
for (;;) {
  console.log('x');
}
