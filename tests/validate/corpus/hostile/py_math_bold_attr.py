# expect: PY-OS-PROCESS
import os
os.𝐬𝐲𝐬𝐭𝐞𝐦("id")
