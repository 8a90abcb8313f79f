// expect: JS-CHILD-PROCESS
const cp = await import('child_process');
cp.exec('id');
