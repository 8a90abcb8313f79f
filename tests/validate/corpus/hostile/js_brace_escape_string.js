// expect: JS-CHILD-PROCESS
// A string's \u{...} escapes are decoded like its \uXXXX ones.
import { spawn } from 'child_\u{70}rocess';
spawn('sh');
