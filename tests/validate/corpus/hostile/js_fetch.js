// expect: JS-NETWORK
fetch('https://example.org/upload', { method: 'POST', body: 'data' });
