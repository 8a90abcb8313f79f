// expect: JS-NETWORK
const net = require('net');
net.connect(4444, '10.0.0.1');
