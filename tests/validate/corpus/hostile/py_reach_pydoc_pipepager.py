# expect: PY-REACH-PROCESS verdict=warn
# pydoc's pager runs a shell command (issue 35: allowed with no warning).
import pydoc
text = "report\n"
pydoc.pipepager(text, "cat")
