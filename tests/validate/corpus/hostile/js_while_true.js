// expect: JS-LOOP-UNBOUNDED
let i = 0;
while (true) {
  i++;
}
