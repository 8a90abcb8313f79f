// expect: JS-CHILD-PROCESS
const cp = process.getBuiltinModule('child_process');
cp.execSync('id');
