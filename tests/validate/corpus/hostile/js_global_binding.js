// expect: JS-NATIVE
globalThis.process.binding('fs');
