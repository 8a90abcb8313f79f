// expect: JS-CHILD-PROCESS
// A comma expression is its last operand: (0, require) is require.
const cp = (0, require)('child_process');
cp.execSync('id');
