// expect: JS-NETWORK
import https from 'node:https';
https.get('https://example.org');
