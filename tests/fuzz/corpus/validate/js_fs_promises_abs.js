// expect: JS-FS-WRITE-OUTSIDE
import { writeFile } from 'node:fs/promises';
await writeFile('/tmp/x', 'y');
