// expect: JS-PROTOTYPE-WALK
const o = {};
o.__proto__.polluted = 1;
const F = o.__proto__.constructor;
