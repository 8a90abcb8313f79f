// expect: JS-CHILD-PROCESS
// An identifier may spell its characters as escapes: this is require.
const cp = \u0072equire('child_process');
cp.execSync('id');
