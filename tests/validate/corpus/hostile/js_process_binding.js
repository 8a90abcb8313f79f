// expect: JS-NATIVE
const sp = process.binding('spawn_sync');
sp.spawn({ file: 'id' });
