// expect: JS-LOOP-UNBOUNDED verdict=warn
let i = 0;
while (true) {
  i++;
}
