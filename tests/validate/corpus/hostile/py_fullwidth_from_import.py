# expect: PY-IMPORT-PROCESS PY-OS-PROCESS
# "from subprocess import run" and "from os import system", with a
# fullwidth and a mathematical bold first letter.
from ｓubprocess import run
from 𝐨s import system
run(["id"])
system("id")
