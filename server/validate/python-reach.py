#!/usr/bin/env python3
"""python-reach.py: writes the reach section of rules/python.scm (from the
line ';; --- reach' to the loop rules), whose lists repeat in several patterns:
the known modules, the partly known ones with their harmless attributes,
and the risky corners of known ones, by capability. Edit the lists here,
then `python3 server/validate/python-reach.py --write`; `--check` (run by
tests/suites/40-validate.sh) fails when python.scm's section differs.
kiln reads python.scm only. Judgements: docs/validator.md, "What Python
code can reach"."""
import os
import sys

WHOLE = ("__future__|math|cmath|statistics|json|csv|re|datetime|time|calendar|zoneinfo|collections|itertools|functools|operator|string|textwrap|decimal|fractions|random|heapq|bisect|array|copy|dataclasses|enum|typing|typing_extensions|abc|numbers|pprint|reprlib|unicodedata|hashlib|hmac|base64|binascii|struct|zlib|gzip|bz2|lzma|zipfile|tarfile|io|pathlib|glob|fnmatch|difflib|secrets|warnings|contextlib|traceback|weakref|locale|gettext|argparse|optparse|getopt|html|xml|sqlite3|stat|keyword|token|tokenize|ast|dis|colorsys|graphlib|shlex|queue|threading|sched|contextvars|quopri|codecs|mimetypes|email|mailbox|plistlib|configparser|tomllib|filecmp|fileinput|tempfile|errno|copyreg|types|atexit|signal|getpass|pwd|grp|wave|posixpath|ntpath|opcode|encodings|dbm|sysconfig|concurrent|asyncio|logging"
         "|numpy|pandas|matplotlib|mpl_toolkits|scipy|seaborn|sklearn|statsmodels|PIL|pyarrow|tqdm|dateutil|pytz|tzdata|tabulate|openpyxl|networkx|more_itertools|attr|attrs")
PARTLY = "os|sys|shutil|platform|uuid|pickle|_pickle|cPickle|marshal"
# the modules the older rules judge at import (denied); not reported again as unknown
DENIED = ("subprocess|pty|multiprocessing|pexpect|popen2|commands|sh|plumbum"
          "|socket|_socket|socketserver|ssl|urllib|urllib2|urllib3|requests|httpx|aiohttp|http|httplib|ftplib|smtplib|smtpd|poplib|imaplib|nntplib|telnetlib|xmlrpc|paramiko|websocket|websockets|asyncssh|pycurl|webbrowser"
          "|ctypes|_ctypes|cffi|_posixsubprocess|posix|nt|_winapi|_thread"
          "|importlib|imp|runpy|code|codeop|zipimport|pkgutil|builtins|__builtin__")
PROC_MOD = "pydoc|distutils|setuptools|pip|ensurepip|venv|numpy\\.f2py|numpy\\.distutils|matplotlib\\.animation|PIL\\.ImageShow|PIL\\.ImageGrab|pandas\\.io\\.clipboards?"
PROC_ATTR = "platform\\.(uname|processor|architecture|platform|_[A-Za-z_]+)|uuid\\.(uuid1|getnode|_[A-Za-z_]+)|pandas\\.read_clipboard|asyncio\\.(get_event_loop|new_event_loop|get_running_loop)"
NET_MOD = "syslog|asyncore|asynchat|wsgiref|pyarrow\\.(fs|flight)|scipy\\.datasets"
NET_ATTR = "logging\\.handlers\\.(SocketHandler|DatagramHandler|SysLogHandler|SMTPHandler|HTTPHandler)|asyncio\\.(open_connection|start_server|open_unix_connection|start_unix_server)|seaborn\\.load_dataset|sklearn\\.datasets\\.fetch_[a-z0-9_]+|statsmodels\\.(api\\.)?datasets\\.get_rdataset|numpy\\.(lib\\.(npyio|_datasource)\\.)?DataSource|pandas\\.read_gbq"
NATIVE_MOD = "numpy\\.ctypeslib"
NATIVE_ATTR = "scipy\\.LowLevelCallable|sys\\.setdlopenflags"
CODE_MOD = "doctest|timeit|pdb|bdb|profile|cProfile|trace|rlcompleter|pstats|shelve|dill|cloudpickle|jsonpickle|joblib|site|logging\\.config|pandas\\.io\\.pytables|PIL\\.ImageMath"
CODE_ATTR = "(c|_)?pickle\\._[A-Za-z_]+|marshal\\._[A-Za-z_]+|networkx\\.read_gpickle|pandas\\.(read_hdf|HDFStore)|statsmodels\\.(api\\.)?load_pickle|sys\\.(settrace|setprofile|addaudithook|breakpointhook)"
COMP_MOD = "inspect|gc"
COMP_ATTR = "operator\\.(attrgetter|methodcaller)"

ALLOW = (
 "^os\\.(path|sep|altsep|extsep|pathsep|linesep|curdir|pardir|defpath|devnull|name|environ|environb|getenv|getenvb|putenv|unsetenv|getcwd|getcwdb|chdir|listdir|scandir|walk|fwalk|stat|lstat|fstat|stat_result|statvfs|DirEntry|PathLike|fspath|fsencode|fsdecode|makedirs|mkdir|remove|unlink|rmdir|removedirs|rename|renames|replace|chmod|lchmod|fchmod|chown|lchown|fchown|chflags|utime|truncate|ftruncate|symlink|link|readlink|access|[FRWX]_OK|O_[A-Z_]+|SEEK_(SET|CUR|END)|cpu_count|getpid|getppid|getuid|geteuid|getgid|getegid|getlogin|getgroups|umask|urandom|getrandom|get_terminal_size|terminal_size|times|uname|strerror|error|open|close|read|write|fdopen|pipe|isatty|fsync|lseek|sched_getaffinity|getloadavg|supports_[a-z_]+|samestat|device_encoding"
 "|system|popen[0-9]?|exec[lv]p?e?|spawn[lv]p?e?|fork|forkpty|kill|killpg|posix_spawnp?|startfile|plock|mkfifo|mknod)$"
 "|^sys\\.(argv|orig_argv|stdin|stdout|stderr|exit|version|version_info|hexversion|implementation|platform|byteorder|maxsize|maxunicode|float_info|int_info|hash_info|float_repr_style|getsizeof|getrecursionlimit|setrecursionlimit|getdefaultencoding|getfilesystemencoding|getfilesystemencodeerrors|path|executable|prefix|base_prefix|exec_prefix|base_exec_prefix|platlibdir|flags|exc_info|exception|last_type|last_value|last_traceback|stdlib_module_names|builtin_module_names|api_version|copyright|excepthook|displayhook|getrefcount|intern|is_finalizing|set_int_max_str_digits|get_int_max_str_digits|getswitchinterval|setswitchinterval|dont_write_bytecode|ps1|ps2|thread_info|warnoptions|tracebacklimit|meta_path|path_hooks|path_importer_cache|setdlopenflags|settrace|setprofile|addaudithook|breakpointhook)$"
 "|^shutil\\.(copy|copy2|copyfile|copyfileobj|copymode|copystat|copytree|move|rmtree|chown|disk_usage|which|get_terminal_size|make_archive|unpack_archive|get_archive_formats|get_unpack_formats|ignore_patterns|Error|SameFileError|SpecialFileError|ReadError|RegistryError|COPY_BUFSIZE)$"
)

def esc(s):
    return s.replace("\\", "\\\\")

out = []
w = out.append
w(";; --- reach (category reach, docs/validator.md \"What Python code can")
w(";; reach\"): allow only what kiln knows cannot start processes, connect,")
w(";; load native code, run or deserialize code, or reach all of an object.")
w(";; Written by server/validate/python-reach.py from its lists (the known")
w(";; modules, the partly known ones with their harmless attributes, the")
w(";; risky corners of known ones): edit them there, not here.")
w("")
w("; an import of a module on no list: its code is not checked here")
known = f"^({WHOLE}|{PARTLY}|{DENIED}|{PROC_MOD}|{NET_MOD}|{CODE_MOD}|{COMP_MOD})(\\.|$)"
w(f'(import_statement name: [(dotted_name) @PY-REACH-UNKNOWN (aliased_import name: (dotted_name) @PY-REACH-UNKNOWN)]\n  (#not-match? @PY-REACH-UNKNOWN "{esc(known)}"))')
w(f'(import_from_statement module_name: (dotted_name) @PY-REACH-UNKNOWN\n  (#not-match? @PY-REACH-UNKNOWN "{esc(known)}"))')
w(f'((call function: (_) @_f arguments: (argument_list . (_) @_m)) @PY-REACH-UNKNOWN\n  (#qname-match? @_f "^((builtins|__builtins__)\\\\.)?__import__$")\n  (#not-match? @_m "{esc(known)}"))')
w("")
w("; the partly known modules os, sys and shutil: each attribute not on their")
w("; list, however it is reached (os.x, __import__('os').x, sys.modules['os'].x,")
w("; getattr(os, 'x'), from os import x)")
m = "^(os|sys|shutil)\\.[A-Za-z0-9_]+$"
for ctx in ("(attribute) @PY-REACH-UNKNOWN",
            "(call function: (_) @_f) @PY-REACH-UNKNOWN",
            "(import_from_statement name: [(dotted_name) @PY-REACH-UNKNOWN (aliased_import alias: (identifier) @PY-REACH-UNKNOWN)])"):
    getattr_only = "\n  (#qname-match? @_f \"^(builtins\\\\.)?getattr$\")" if "@_f" in ctx else ""
    w(f'({ctx}\n  (#qname-match? @PY-REACH-UNKNOWN "{esc(m)}"){getattr_only}\n  (#not-qname-match? @PY-REACH-UNKNOWN "{esc(ALLOW)}"))')
w("")
w("; the risky corners of known modules, by capability: an import of one, an")
w("; attribute path to one, a name imported from one")
for rule, mods, attrs in (("PY-REACH-PROCESS", PROC_MOD, PROC_ATTR), ("PY-REACH-NETWORK", NET_MOD, NET_ATTR),
                          ("PY-REACH-NATIVE", NATIVE_MOD, NATIVE_ATTR), ("PY-REACH-CODE", CODE_MOD, CODE_ATTR),
                          ("PY-REACH-COMPUTED", COMP_MOD, COMP_ATTR)):
    imp = f"^({mods}|{attrs})(\\.|$)"
    exact = f"^({attrs})$|^({mods})(\\.[A-Za-z0-9_]+)?$"
    w(f'(import_statement name: [(dotted_name) @{rule} (aliased_import name: (dotted_name) @{rule})]\n  (#match? @{rule} "{esc(imp)}"))')
    w(f'(import_from_statement module_name: (dotted_name) @{rule}\n  (#match? @{rule} "{esc(imp)}"))')
    w(f'((import_from_statement name: [(dotted_name) @{rule} (aliased_import alias: (identifier) @{rule})])\n  (#qname-match? @{rule} "{esc(exact)}"))')
    w(f'((attribute) @{rule}\n  (#qname-match? @{rule} "{esc(exact)}"))')
    w(f'((call function: (_) @_f) @{rule}\n  (#qname-match? @_f "^(builtins\\\\.)?getattr$")\n  (#qname-match? @{rule} "{esc(exact)}"))')
w("")
w("; an object reached through another module's namespace: numpy.lib.npyio.os,")
w("; tempfile._os (a module a known module imported for itself)")
reexp = f"^({WHOLE})\\.([A-Za-z0-9_]+\\.)*_?({PARTLY}|{DENIED}|pydoc|inspect|gc)$"
w(f'((attribute) @PY-REACH-UNKNOWN\n  (#qname-match? @PY-REACH-UNKNOWN "{esc(reexp)}"))')
w("")
w("; computed access: a name not written in the code reaches all of its object")
w('((call function: (_) @_f arguments: (argument_list . (_) . (_) @_n)) @PY-REACH-COMPUTED')
w('  (#qname-match? @_f "^(builtins\\\\.)?(getattr|setattr|delattr)$")')
w('  (#not-literal? @_n))')
w('((subscript value: (call function: (_) @_f) subscript: (_) @_n) @PY-REACH-COMPUTED')
w('  (#qname-match? @_f "^(builtins\\\\.)?(globals|locals|vars)$")')
w('  (#not-literal? @_n))')
w('((call function: (attribute object: (call function: (_) @_f) attribute: (identifier) @_m) arguments: (argument_list . (_) @_n)) @PY-REACH-COMPUTED')
w('  (#qname-match? @_f "^(builtins\\\\.)?(globals|locals|vars)$")')
w('  (#match? @_m "^(get|pop|setdefault)$")')
w('  (#not-literal? @_n))')
w("; getattr, setattr and delattr as values (functools.reduce(getattr, ...)),")
w("; and a module kiln knows only in part handed on where its uses are not seen")
w("; (x = os is followed as an alias, but not as A.x when it is a class's;")
w("; getattr(os, 'getcwd') with a plain name is judged as os.getcwd)")
val = "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"
w(f'((call function: (_) @_f arguments: (argument_list (identifier) @PY-REACH-COMPUTED))\n  (#qname-match? @PY-REACH-COMPUTED "{esc(val)}")\n  (#not-qname-match? @_f "^(builtins\\\\.)?(getattr|hasattr)$"))')
w(f'((class_definition superclasses: (argument_list (identifier) @PY-REACH-COMPUTED))\n  (#qname-match? @PY-REACH-COMPUTED "{esc(val)}"))')
for parent in ("list", "tuple", "set", "expression_list", "return_statement",
               "conditional_expression", "boolean_operator"):
    w(f'(({parent} (identifier) @PY-REACH-COMPUTED)\n  (#qname-match? @PY-REACH-COMPUTED "{esc(val)}"))')
for parent, field in (("keyword_argument", "value"), ("pair", "value"), ("lambda", "body"),
                      ("default_parameter", "value"), ("typed_default_parameter", "value"),
                      ("named_expression", "value")):
    w(f'(({parent} {field}: (identifier) @PY-REACH-COMPUTED)\n  (#qname-match? @PY-REACH-COMPUTED "{esc(val)}"))')
w(f'((assignment right: (identifier) @PY-REACH-COMPUTED)\n  (#qname-match? @PY-REACH-COMPUTED "{esc(val)}"))')
w("")
w("; single corners")
w("; help() pages through pydoc's pager, which runs $PAGER, pager or less on a terminal")
w('((call function: (identifier) @PY-REACH-PROCESS)\n  (#qname-match? @PY-REACH-PROCESS "^(builtins\\\\.)?help$"))')
w("; sys.path changed: a later import runs whatever file it finds first")
w('((call function: (attribute object: (_) @_p) @PY-REACH-CODE)\n  (#qname-match? @_p "^sys\\\\.path$")\n  (#qname-match? @PY-REACH-CODE "^sys\\\\.path\\\\.(insert|append|extend|__setitem__|__iadd__)$"))')
w('((assignment left: [(attribute) (subscript)] @PY-REACH-CODE)\n  (#qname-match? @PY-REACH-CODE "^sys\\\\.path(\\\\..*)?$"))')
w('((augmented_assignment left: (attribute) @PY-REACH-CODE)\n  (#qname-match? @PY-REACH-CODE "^sys\\\\.path$"))')
w("; numpy.load(..., allow_pickle=True) unpickles object arrays")
w('((call function: (_) @PY-REACH-CODE arguments: (argument_list (keyword_argument name: (identifier) @_k value: (_) @_v)))\n  (#qname-match? @PY-REACH-CODE "^numpy\\\\.(load|lib\\\\.format\\\\.read_array)$")\n  (#match? @_k "^allow_pickle$")\n  (#not-match? @_v "^(False|0)$"))')
w("; sqlite3 loads extensions: shared libraries")
w('((call function: (attribute attribute: (identifier) @PY-REACH-NATIVE))\n  (#match? @PY-REACH-NATIVE "^(enable_load_extension|load_extension)$"))')
w("; matplotlib's usetex runs latex, dvipng and ghostscript; a module:// backend imports a module")
w('((string) @PY-REACH-PROCESS\n  (#match? @PY-REACH-PROCESS "^text\\\\.usetex$"))')
w('((keyword_argument name: (identifier) @PY-REACH-PROCESS value: (_) @_v)\n  (#match? @PY-REACH-PROCESS "^usetex$")\n  (#not-match? @_v "^(False|0|None)$"))')
w('((call function: (_) @PY-REACH-CODE arguments: (argument_list . (_) @_b))\n  (#qname-match? @PY-REACH-CODE "^matplotlib\\\\.(use|pyplot\\\\.switch_backend)$")\n  (#match? @_b "^module://"))')
w("; pandas' eval and query run an expression: one built at run time, or one that")
w("; names interpreter internals, is code kiln has not seen")
w('((call function: (attribute attribute: (identifier) @_m) @PY-REACH-CODE arguments: (argument_list . (_) @_e))\n  (#match? @_m "^(eval|query)$")\n  (#not-literal? @_e))')
w('((call function: (attribute attribute: (identifier) @_m) @PY-REACH-CODE arguments: (argument_list . (string) @_e))\n  (#match? @_m "^(eval|query)$")\n  (#match? @_e "__"))')
w('((call function: (attribute attribute: (identifier) @PY-REACH-PROCESS))\n  (#match? @PY-REACH-PROCESS "^to_clipboard$"))')

text = "\n".join(out) + "\n\n"
scm = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules", "python.scm")
with open(scm, encoding="utf-8") as f:
    have = f.read()
# The section runs from its first line to the loop rules that follow it.
start = have.index(";; --- reach")
end = have.index("; --- loops with no way out")
if sys.argv[1:] == ["--write"]:
    with open(scm, "w", encoding="utf-8") as f:
        f.write(have[:start] + text + have[end:])
elif sys.argv[1:] == ["--check"]:
    if have[start:end] != text:
        sys.exit("python.scm's reach section differs from python-reach.py's lists: "
                 "run python3 server/validate/python-reach.py --write")
else:
    sys.exit("usage: python-reach.py --write | --check")
