// expect: JS-EVAL JS-NETWORK
// Escapes after the first character, and in braces: eval and require.
console.log(ev\u{61}l('1 + 1'));
r\u0065quire('net').connect(80, 'example.com');
