// expect: JS-CHILD-PROCESS
process.mainModule.require('child_process').execSync('id');
