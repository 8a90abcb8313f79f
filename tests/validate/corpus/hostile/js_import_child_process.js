// expect: JS-CHILD-PROCESS
import { spawn } from 'child_process';
spawn('sh');
