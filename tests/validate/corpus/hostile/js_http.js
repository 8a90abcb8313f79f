// expect: JS-NETWORK
const http = require('http');
http.get('http://example.org', (r) => r.pipe(process.stdout));
