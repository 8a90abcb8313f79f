# expect: PY-REACH-PROCESS verdict=warn
# help() pages through pydoc's pager, which runs a program on a terminal.
help(len)
