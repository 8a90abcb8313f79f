// expect: KILN-INVISIBLE
// Two names that look the same: the second has a zero width joiner.
const admin = false;
const ad‍min = true;
if (ad‍min) console.log("granted");
