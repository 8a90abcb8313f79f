// expect: JS-LOOP-UNBOUNDED verdict=warn
for (;;) {
  console.log('x');
}
