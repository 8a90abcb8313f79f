// expect: JS-PROTOTYPE-WALK
const o = {};
o['__proto__']['polluted'] = 1;
