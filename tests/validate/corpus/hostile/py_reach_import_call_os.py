# expect: PY-REACH-UNKNOWN verdict=warn
# An unlisted part of os, reached through __import__ and sys.modules.
import sys
__import__("os").memfd_create("a")
sys.modules["os"].memfd_create("b")
