// echo-server.js: the JSON-RPC server kiln's protocol bench compares
// against: vscode-jsonrpc (what VS Code's own language clients and
// servers use) over stdin/stdout with the same LSP framing. It answers
// "initialize" and echoes the params of "bench/echo".
'use strict';
const rpc = require('vscode-jsonrpc/node');

const conn = rpc.createMessageConnection(
  new rpc.StreamMessageReader(process.stdin),
  new rpc.StreamMessageWriter(process.stdout));
conn.onRequest('initialize', () => ({ capabilities: {}, serverInfo: { name: 'echo' } }));
conn.onRequest('shutdown', () => null);
conn.onRequest('bench/echo', (params) => params);
conn.onNotification('exit', () => process.exit(0));
conn.onClose(() => process.exit(0));
process.stdin.on('end', () => process.exit(0));
conn.listen();
