# expect: PY-REACH-NETWORK verdict=warn
import logging.handlers
log = logging.getLogger("x")
log.addHandler(logging.handlers.SysLogHandler())
