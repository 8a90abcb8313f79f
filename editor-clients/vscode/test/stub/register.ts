// test/stub/register.ts: makes `require('vscode')` load the stub, for the
// extension and for vscode-languageclient alike. Imported first by every
// test file.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Module = require('module');
const stub = require.resolve('./vscode');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request: string, ...rest: unknown[]) {
  if (request === 'vscode') {
    return stub;
  }
  return resolve.call(this, request, ...rest);
};
