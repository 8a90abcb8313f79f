// expect: JS-REACH-FUNCTION verdict=warn
const F = [].map.constructor;
F('return 1')();
