; Python policy queries. Each capture named after a rule id (python.json)
; marks the range reported; captures starting with _ only feed predicates.
; Predicates: #eq? #not-eq? #match? #not-match? #any-of? (on the constant
; value of a node when it has one, else its text), #qname-match? (the name
; with imports and aliases resolved: "from os import system as s" makes s
; "os.system"), #not-literal?, #is-module?, #outside-workspace?,
; #not-contains?. See docs/validator.md.

; --- imports of risky modules: import m / import m as x / from m import y / __import__('m')
(import_statement name: [(dotted_name) @PY-IMPORT-PROCESS (aliased_import name: (dotted_name) @PY-IMPORT-PROCESS)]
  (#match? @PY-IMPORT-PROCESS "^(subprocess|pty|multiprocessing|pexpect|popen2|commands|sh|plumbum|asyncio\\.subprocess|concurrent\\.futures\\.process)(\\.|$)"))
(import_from_statement module_name: (dotted_name) @PY-IMPORT-PROCESS
  (#match? @PY-IMPORT-PROCESS "^(subprocess|pty|multiprocessing|pexpect|popen2|commands|sh|plumbum|asyncio\\.subprocess|concurrent\\.futures\\.process)(\\.|$)"))
((call function: [(identifier) (attribute)]) @PY-IMPORT-PROCESS
  (#qname-match? @PY-IMPORT-PROCESS "^(subprocess|pty|multiprocessing|pexpect|popen2|commands)$"))

(import_statement name: [(dotted_name) @PY-IMPORT-NETWORK (aliased_import name: (dotted_name) @PY-IMPORT-NETWORK)]
  (#match? @PY-IMPORT-NETWORK "^(socket|_socket|socketserver|ssl|urllib|urllib2|urllib3|requests|httpx|aiohttp|http|httplib|ftplib|smtplib|smtpd|poplib|imaplib|nntplib|telnetlib|xmlrpc|paramiko|websocket|websockets|asyncssh|pycurl|webbrowser)(\\.|$)"))
(import_from_statement module_name: (dotted_name) @PY-IMPORT-NETWORK
  (#match? @PY-IMPORT-NETWORK "^(socket|_socket|socketserver|ssl|urllib|urllib2|urllib3|requests|httpx|aiohttp|http|httplib|ftplib|smtplib|smtpd|poplib|imaplib|nntplib|telnetlib|xmlrpc|paramiko|websocket|websockets|asyncssh|pycurl|webbrowser)(\\.|$)"))
((call function: [(identifier) (attribute)]) @PY-IMPORT-NETWORK
  (#qname-match? @PY-IMPORT-NETWORK "^(socket|_socket|socketserver|ssl|urllib|urllib\\.request|urllib2|urllib3|requests|httpx|aiohttp|http|http\\.client|httplib|ftplib|smtplib|poplib|imaplib|telnetlib|xmlrpc\\.client|paramiko|webbrowser)$"))

(import_statement name: [(dotted_name) @PY-IMPORT-NATIVE (aliased_import name: (dotted_name) @PY-IMPORT-NATIVE)]
  (#match? @PY-IMPORT-NATIVE "^(ctypes|_ctypes|cffi|_posixsubprocess|posix|nt|_winapi|_thread)(\\.|$)"))
(import_from_statement module_name: (dotted_name) @PY-IMPORT-NATIVE
  (#match? @PY-IMPORT-NATIVE "^(ctypes|_ctypes|cffi|_posixsubprocess|posix|nt|_winapi|_thread)(\\.|$)"))
((call function: [(identifier) (attribute)]) @PY-IMPORT-NATIVE
  (#qname-match? @PY-IMPORT-NATIVE "^(ctypes|_ctypes|cffi|_posixsubprocess|posix|nt)$"))

(import_statement name: [(dotted_name) @PY-IMPORT-DYNAMIC (aliased_import name: (dotted_name) @PY-IMPORT-DYNAMIC)]
  (#match? @PY-IMPORT-DYNAMIC "^(importlib|imp|runpy|code|codeop|zipimport|pkgutil|builtins|__builtin__)(\\.|$)"))
(import_from_statement module_name: (dotted_name) @PY-IMPORT-DYNAMIC
  (#match? @PY-IMPORT-DYNAMIC "^(importlib|imp|runpy|code|codeop|zipimport|pkgutil|builtins|__builtin__)(\\.|$)"))

((import_from_statement module_name: (dotted_name) @_m (wildcard_import) @PY-STAR-IMPORT-RISKY)
  (#match? @_m "^(os|posix|subprocess|pty|socket|ctypes|shutil|importlib|multiprocessing|builtins|pickle|marshal)$"))

; --- os process functions, however they are named or reached
((call function: (_) @PY-OS-PROCESS)
  (#qname-match? @PY-OS-PROCESS "^(os|posix|nt)\\.(system|popen[0-9]?|exec[lv]p?e?|spawn[lv]p?e?|fork|forkpty|kill|killpg|posix_spawnp?|startfile|plock)$|^(concurrent\\.futures|asyncio)\\.(ProcessPoolExecutor|create_subprocess_exec|create_subprocess_shell)$"))
((aliased_import alias: (identifier) @PY-OS-PROCESS)
  (#qname-match? @PY-OS-PROCESS "^(os|posix|nt)\\.(system|popen[0-9]?|exec[lv]p?e?|spawn[lv]p?e?|fork|forkpty|kill|killpg|posix_spawnp?|startfile)$|^(concurrent\\.futures|asyncio)\\.(ProcessPoolExecutor|create_subprocess_exec|create_subprocess_shell)$"))
((import_from_statement name: (dotted_name) @PY-OS-PROCESS)
  (#qname-match? @PY-OS-PROCESS "^(os|posix|nt)\\.(system|popen[0-9]?|exec[lv]p?e?|spawn[lv]p?e?|fork|forkpty|kill|killpg|posix_spawnp?|startfile)$|^(concurrent\\.futures|asyncio)\\.(ProcessPoolExecutor|create_subprocess_exec|create_subprocess_shell)$"))
((argument_list [(attribute) (identifier)] @PY-OS-PROCESS)
  (#qname-match? @PY-OS-PROCESS "^(os|posix|nt)\\.(system|popen[0-9]?|exec[lv]p?e?|spawn[lv]p?e?|fork|forkpty|kill|killpg|posix_spawnp?|startfile)$"))
((assignment right: [(attribute) (identifier) (call)] @PY-OS-PROCESS)
  (#qname-match? @PY-OS-PROCESS "^(os|posix|nt)\\.(system|popen[0-9]?|exec[lv]p?e?|spawn[lv]p?e?|fork|forkpty|kill|killpg|posix_spawnp?|startfile)$"))

; --- code built at run time
((call function: (_) @PY-DYNAMIC-CODE)
  (#qname-match? @PY-DYNAMIC-CODE "^((builtins|__builtins__|__builtin__)\\.)?(eval|exec|compile|execfile|breakpoint)$|^importlib\\.reload$|^runpy\\.|^code\\.(interact|InteractiveConsole|InteractiveInterpreter)$|^types\\.(CodeType|FunctionType)$"))
; __import__("doctest") of a constant name is an import: the import rules
; judge it (the call patterns above see its module). Only a name computed
; at run time is dynamic code.
((call function: (_) @PY-DYNAMIC-CODE arguments: (argument_list . (_)? @_mod))
  (#qname-match? @PY-DYNAMIC-CODE "^((builtins|__builtins__|__builtin__)\\.)?__import__$|^importlib\\.(import_module|__import__)$")
  (#not-literal? @_mod))
((argument_list [(attribute) (identifier)] @PY-DYNAMIC-CODE)
  (#qname-match? @PY-DYNAMIC-CODE "^((builtins|__builtins__)\\.)?(eval|exec|compile|__import__)$"))
((assignment right: [(attribute) (identifier)] @PY-DYNAMIC-CODE)
  (#qname-match? @PY-DYNAMIC-CODE "^((builtins|__builtins__)\\.)?(eval|exec|compile|__import__)$"))
((aliased_import alias: (identifier) @PY-DYNAMIC-CODE)
  (#qname-match? @PY-DYNAMIC-CODE "^(builtins\\.(eval|exec|compile|__import__)|importlib\\.import_module)$"))
((import_from_statement name: (dotted_name) @PY-DYNAMIC-CODE)
  (#qname-match? @PY-DYNAMIC-CODE "^(builtins\\.(eval|exec|compile|__import__)|importlib\\.import_module)$"))

; --- computed attribute names on modules: getattr(os, 'sys' + 'tem'), vars(os)[name]
((call function: (_) @_f arguments: (argument_list . (_) @_obj . (_) @PY-GETATTR-COMPUTED))
  (#qname-match? @_f "^(builtins\\.)?(getattr|setattr|delattr)$")
  (#is-module? @_obj)
  (#not-literal? @PY-GETATTR-COMPUTED))
((call function: (_) @_f arguments: (argument_list . (_) @_obj .)) @PY-GETATTR-COMPUTED
  (#qname-match? @_f "^(builtins\\.)?vars$")
  (#is-module? @_obj))
((attribute object: (_) @_obj attribute: (identifier) @PY-GETATTR-COMPUTED)
  (#eq? @PY-GETATTR-COMPUTED "__dict__")
  (#is-module? @_obj))

; --- interpreter internals
((attribute attribute: (identifier) @PY-DUNDER-WALK)
  (#match? @PY-DUNDER-WALK "^(__(subclasses|globals|builtins|bases|base|mro|code|closure|getattribute|loader|spec|self|func|import)__|f_globals|f_builtins|f_back|f_locals|gi_frame|cr_frame|ag_frame|tb_frame|_getframe|currentframe|func_globals)$"))
((identifier) @PY-DUNDER-WALK
  (#match? @PY-DUNDER-WALK "^__(builtins|loader|spec|builtin__)__$"))
((string) @PY-DUNDER-WALK
  (#match? @PY-DUNDER-WALK "^__(subclasses|globals|builtins|bases|base|mro|code|closure|getattribute|import|loader|dict)__$"))

; --- deserialising code
((call function: (_) @PY-DESERIALIZE)
  (#qname-match? @PY-DESERIALIZE "^((c|_)?[pP]ickle|marshal|dill|cloudpickle|shelve|jsonpickle|joblib)\\.(loads?|Unpickler|open)$|^pandas\\.read_pickle$"))
((import_from_statement name: (dotted_name) @PY-DESERIALIZE)
  (#qname-match? @PY-DESERIALIZE "^((c|_)?pickle|marshal|dill|shelve)\\.(loads?|Unpickler)$"))

; --- the import machinery
((assignment left: (subscript value: (_) @PY-SYS-MODULES))
  (#qname-match? @PY-SYS-MODULES "^sys\\.(modules|meta_path|path_hooks|path_importer_cache)$"))
((assignment left: (attribute) @PY-SYS-MODULES)
  (#qname-match? @PY-SYS-MODULES "^sys\\.(modules|meta_path|path_hooks|path_importer_cache)$"))
((delete_statement (subscript value: (_) @PY-SYS-MODULES))
  (#qname-match? @PY-SYS-MODULES "^sys\\.(modules|meta_path|path_hooks)$"))
((call function: (attribute object: (_) @PY-SYS-MODULES attribute: (identifier) @_m))
  (#qname-match? @PY-SYS-MODULES "^sys\\.(modules|meta_path|path_hooks)$")
  (#match? @_m "^(update|pop|popitem|clear|setdefault|insert|append|extend|remove|__setitem__|__delitem__)$"))

; --- files
((call function: (_) @_f arguments: (argument_list . (_) @PY-FILE-WRITE-OUTSIDE . (_) @_mode))
  (#qname-match? @_f "^((builtins|io|codecs)\\.)?open$")
  (#match? @_mode "[wax+]")
  (#outside-workspace? @PY-FILE-WRITE-OUTSIDE))
((call function: (_) @_f arguments: (argument_list . (_) @PY-FILE-WRITE-OUTSIDE (keyword_argument name: (identifier) @_k value: (_) @_mode)))
  (#qname-match? @_f "^((builtins|io|codecs)\\.)?open$")
  (#eq? @_k "mode")
  (#match? @_mode "[wax+]")
  (#outside-workspace? @PY-FILE-WRITE-OUTSIDE))
((call function: (attribute attribute: (identifier) @_m) arguments: (argument_list . (_) @PY-FILE-WRITE-OUTSIDE))
  (#match? @_m "^(to_(csv|json|excel|parquet|pickle|html|feather|hdf|sql|latex|xml|stata|orc)|savefig|savetxt|savez|savez_compressed|save|write_text|write_bytes)$")
  (#outside-workspace? @PY-FILE-WRITE-OUTSIDE))
((call function: (_) @_f arguments: (argument_list . (_) @PY-FILE-WRITE-OUTSIDE))
  (#qname-match? @_f "^(os\\.(remove|unlink|rmdir|removedirs|chmod|lchmod|chown|lchown|truncate|mkdir|makedirs|mkfifo|mknod|utime)|shutil\\.(rmtree|chown|move))$")
  (#outside-workspace? @PY-FILE-WRITE-OUTSIDE))
((call function: (_) @_f arguments: (argument_list . (_) . (_) @PY-FILE-WRITE-OUTSIDE))
  (#qname-match? @_f "^(shutil\\.(copy|copy2|copyfile|copytree|move)|os\\.(rename|replace|symlink|link))$")
  (#outside-workspace? @PY-FILE-WRITE-OUTSIDE))
((call function: (attribute object: (call function: (_) @_p arguments: (argument_list . (_) @PY-FILE-WRITE-OUTSIDE)) attribute: (identifier) @_m))
  (#qname-match? @_p "^(pathlib\\.)?(Pure|Posix)?Path$")
  (#match? @_m "^(write_text|write_bytes|touch|mkdir|open|unlink|rmdir|chmod|rename|replace|symlink_to|hardlink_to)$")
  (#outside-workspace? @PY-FILE-WRITE-OUTSIDE))

((call function: (_) @_f arguments: (argument_list . (_) . (_) @_mode)) @PY-FILE-WRITE
  (#qname-match? @_f "^((builtins|io|codecs)\\.)?open$")
  (#match? @_mode "[wax+]"))
((call function: (_) @_f arguments: (argument_list (keyword_argument name: (identifier) @_k value: (_) @_mode))) @PY-FILE-WRITE
  (#qname-match? @_f "^((builtins|io|codecs)\\.)?open$")
  (#eq? @_k "mode")
  (#match? @_mode "[wax+]"))
((call function: (attribute attribute: (identifier) @_m)) @PY-FILE-WRITE
  (#match? @_m "^(to_(csv|json|excel|parquet|pickle|html|feather|hdf|sql|latex|xml|stata|orc)|savefig|savetxt|savez|savez_compressed|write_text|write_bytes|touch|mkdir|makedirs)$"))
((call function: (_) @_f) @PY-FILE-WRITE
  (#qname-match? @_f "^(shutil\\.(copy|copy2|copyfile|copytree)|os\\.(rename|replace|symlink|link|mkfifo|mknod)|numpy\\.(save|savez|savez_compressed|savetxt))$"))

((call function: (_) @PY-FILE-DELETE)
  (#qname-match? @PY-FILE-DELETE "^(os\\.(remove|unlink|rmdir|removedirs|chmod|lchmod|fchmod|chown|lchown|fchown|truncate|ftruncate|chflags)|shutil\\.(rmtree|move|chown))$"))
((call function: (attribute attribute: (identifier) @_m) @PY-FILE-DELETE)
  (#match? @_m "^(unlink|rmdir|rmtree|chmod|lchmod|chown)$"))
((aliased_import alias: (identifier) @PY-FILE-DELETE)
  (#qname-match? @PY-FILE-DELETE "^(os\\.(remove|unlink|rmdir|removedirs|chmod|chown)|shutil\\.(rmtree|move))$"))
((import_from_statement name: (dotted_name) @PY-FILE-DELETE)
  (#qname-match? @PY-FILE-DELETE "^(os\\.(remove|unlink|rmdir|removedirs|chmod|chown)|shutil\\.(rmtree|move))$"))

;; --- reach (category reach, docs/validator.md "What Python code can
;; reach"): allow only what kiln knows cannot start processes, connect,
;; load native code, run or deserialize code, or reach all of an object.
;; Written by server/validate/python-reach.py from its lists (the known
;; modules, the partly known ones with their harmless attributes, the
;; risky corners of known ones): edit them there, not here.

; an import of a module on no list: its code is not checked here
(import_statement name: [(dotted_name) @PY-REACH-UNKNOWN (aliased_import name: (dotted_name) @PY-REACH-UNKNOWN)]
  (#not-match? @PY-REACH-UNKNOWN "^(__future__|math|cmath|statistics|json|csv|re|datetime|time|calendar|zoneinfo|collections|itertools|functools|operator|string|textwrap|decimal|fractions|random|heapq|bisect|array|copy|dataclasses|enum|typing|typing_extensions|abc|numbers|pprint|reprlib|unicodedata|hashlib|hmac|base64|binascii|struct|zlib|gzip|bz2|lzma|zipfile|tarfile|io|pathlib|glob|fnmatch|difflib|secrets|warnings|contextlib|traceback|weakref|locale|gettext|argparse|optparse|getopt|html|xml|sqlite3|stat|keyword|token|tokenize|ast|dis|colorsys|graphlib|shlex|queue|threading|sched|contextvars|quopri|codecs|mimetypes|email|mailbox|plistlib|configparser|tomllib|filecmp|fileinput|tempfile|errno|copyreg|types|atexit|signal|getpass|pwd|grp|wave|posixpath|ntpath|opcode|encodings|dbm|sysconfig|concurrent|asyncio|logging|numpy|pandas|matplotlib|mpl_toolkits|scipy|seaborn|sklearn|statsmodels|PIL|pyarrow|tqdm|dateutil|pytz|tzdata|tabulate|openpyxl|networkx|more_itertools|attr|attrs|os|sys|shutil|platform|uuid|pickle|_pickle|cPickle|marshal|subprocess|pty|multiprocessing|pexpect|popen2|commands|sh|plumbum|socket|_socket|socketserver|ssl|urllib|urllib2|urllib3|requests|httpx|aiohttp|http|httplib|ftplib|smtplib|smtpd|poplib|imaplib|nntplib|telnetlib|xmlrpc|paramiko|websocket|websockets|asyncssh|pycurl|webbrowser|ctypes|_ctypes|cffi|_posixsubprocess|posix|nt|_winapi|_thread|importlib|imp|runpy|code|codeop|zipimport|pkgutil|builtins|__builtin__|pydoc|distutils|setuptools|pip|ensurepip|venv|numpy\\.f2py|numpy\\.distutils|matplotlib\\.animation|PIL\\.ImageShow|PIL\\.ImageGrab|pandas\\.io\\.clipboards?|syslog|asyncore|asynchat|wsgiref|pyarrow\\.(fs|flight)|scipy\\.datasets|doctest|timeit|pdb|bdb|profile|cProfile|trace|rlcompleter|pstats|shelve|dill|cloudpickle|jsonpickle|joblib|site|logging\\.config|pandas\\.io\\.pytables|PIL\\.ImageMath|inspect|gc)(\\.|$)"))
(import_from_statement module_name: (dotted_name) @PY-REACH-UNKNOWN
  (#not-match? @PY-REACH-UNKNOWN "^(__future__|math|cmath|statistics|json|csv|re|datetime|time|calendar|zoneinfo|collections|itertools|functools|operator|string|textwrap|decimal|fractions|random|heapq|bisect|array|copy|dataclasses|enum|typing|typing_extensions|abc|numbers|pprint|reprlib|unicodedata|hashlib|hmac|base64|binascii|struct|zlib|gzip|bz2|lzma|zipfile|tarfile|io|pathlib|glob|fnmatch|difflib|secrets|warnings|contextlib|traceback|weakref|locale|gettext|argparse|optparse|getopt|html|xml|sqlite3|stat|keyword|token|tokenize|ast|dis|colorsys|graphlib|shlex|queue|threading|sched|contextvars|quopri|codecs|mimetypes|email|mailbox|plistlib|configparser|tomllib|filecmp|fileinput|tempfile|errno|copyreg|types|atexit|signal|getpass|pwd|grp|wave|posixpath|ntpath|opcode|encodings|dbm|sysconfig|concurrent|asyncio|logging|numpy|pandas|matplotlib|mpl_toolkits|scipy|seaborn|sklearn|statsmodels|PIL|pyarrow|tqdm|dateutil|pytz|tzdata|tabulate|openpyxl|networkx|more_itertools|attr|attrs|os|sys|shutil|platform|uuid|pickle|_pickle|cPickle|marshal|subprocess|pty|multiprocessing|pexpect|popen2|commands|sh|plumbum|socket|_socket|socketserver|ssl|urllib|urllib2|urllib3|requests|httpx|aiohttp|http|httplib|ftplib|smtplib|smtpd|poplib|imaplib|nntplib|telnetlib|xmlrpc|paramiko|websocket|websockets|asyncssh|pycurl|webbrowser|ctypes|_ctypes|cffi|_posixsubprocess|posix|nt|_winapi|_thread|importlib|imp|runpy|code|codeop|zipimport|pkgutil|builtins|__builtin__|pydoc|distutils|setuptools|pip|ensurepip|venv|numpy\\.f2py|numpy\\.distutils|matplotlib\\.animation|PIL\\.ImageShow|PIL\\.ImageGrab|pandas\\.io\\.clipboards?|syslog|asyncore|asynchat|wsgiref|pyarrow\\.(fs|flight)|scipy\\.datasets|doctest|timeit|pdb|bdb|profile|cProfile|trace|rlcompleter|pstats|shelve|dill|cloudpickle|jsonpickle|joblib|site|logging\\.config|pandas\\.io\\.pytables|PIL\\.ImageMath|inspect|gc)(\\.|$)"))
((call function: (_) @_f arguments: (argument_list . (_) @_m)) @PY-REACH-UNKNOWN
  (#qname-match? @_f "^((builtins|__builtins__)\\.)?__import__$")
  (#not-match? @_m "^(__future__|math|cmath|statistics|json|csv|re|datetime|time|calendar|zoneinfo|collections|itertools|functools|operator|string|textwrap|decimal|fractions|random|heapq|bisect|array|copy|dataclasses|enum|typing|typing_extensions|abc|numbers|pprint|reprlib|unicodedata|hashlib|hmac|base64|binascii|struct|zlib|gzip|bz2|lzma|zipfile|tarfile|io|pathlib|glob|fnmatch|difflib|secrets|warnings|contextlib|traceback|weakref|locale|gettext|argparse|optparse|getopt|html|xml|sqlite3|stat|keyword|token|tokenize|ast|dis|colorsys|graphlib|shlex|queue|threading|sched|contextvars|quopri|codecs|mimetypes|email|mailbox|plistlib|configparser|tomllib|filecmp|fileinput|tempfile|errno|copyreg|types|atexit|signal|getpass|pwd|grp|wave|posixpath|ntpath|opcode|encodings|dbm|sysconfig|concurrent|asyncio|logging|numpy|pandas|matplotlib|mpl_toolkits|scipy|seaborn|sklearn|statsmodels|PIL|pyarrow|tqdm|dateutil|pytz|tzdata|tabulate|openpyxl|networkx|more_itertools|attr|attrs|os|sys|shutil|platform|uuid|pickle|_pickle|cPickle|marshal|subprocess|pty|multiprocessing|pexpect|popen2|commands|sh|plumbum|socket|_socket|socketserver|ssl|urllib|urllib2|urllib3|requests|httpx|aiohttp|http|httplib|ftplib|smtplib|smtpd|poplib|imaplib|nntplib|telnetlib|xmlrpc|paramiko|websocket|websockets|asyncssh|pycurl|webbrowser|ctypes|_ctypes|cffi|_posixsubprocess|posix|nt|_winapi|_thread|importlib|imp|runpy|code|codeop|zipimport|pkgutil|builtins|__builtin__|pydoc|distutils|setuptools|pip|ensurepip|venv|numpy\\.f2py|numpy\\.distutils|matplotlib\\.animation|PIL\\.ImageShow|PIL\\.ImageGrab|pandas\\.io\\.clipboards?|syslog|asyncore|asynchat|wsgiref|pyarrow\\.(fs|flight)|scipy\\.datasets|doctest|timeit|pdb|bdb|profile|cProfile|trace|rlcompleter|pstats|shelve|dill|cloudpickle|jsonpickle|joblib|site|logging\\.config|pandas\\.io\\.pytables|PIL\\.ImageMath|inspect|gc)(\\.|$)"))

; the partly known modules os, sys and shutil: each attribute not on their
; list, however it is reached (os.x, __import__('os').x, sys.modules['os'].x,
; getattr(os, 'x'), from os import x)
((attribute) @PY-REACH-UNKNOWN
  (#qname-match? @PY-REACH-UNKNOWN "^(os|sys|shutil)\\.[A-Za-z0-9_]+$")
  (#not-qname-match? @PY-REACH-UNKNOWN "^os\\.(path|sep|altsep|extsep|pathsep|linesep|curdir|pardir|defpath|devnull|name|environ|environb|getenv|getenvb|putenv|unsetenv|getcwd|getcwdb|chdir|listdir|scandir|walk|fwalk|stat|lstat|fstat|stat_result|statvfs|DirEntry|PathLike|fspath|fsencode|fsdecode|makedirs|mkdir|remove|unlink|rmdir|removedirs|rename|renames|replace|chmod|lchmod|fchmod|chown|lchown|fchown|chflags|utime|truncate|ftruncate|symlink|link|readlink|access|[FRWX]_OK|O_[A-Z_]+|SEEK_(SET|CUR|END)|cpu_count|getpid|getppid|getuid|geteuid|getgid|getegid|getlogin|getgroups|umask|urandom|getrandom|get_terminal_size|terminal_size|times|uname|strerror|error|open|close|read|write|fdopen|pipe|isatty|fsync|lseek|sched_getaffinity|getloadavg|supports_[a-z_]+|samestat|device_encoding|system|popen[0-9]?|exec[lv]p?e?|spawn[lv]p?e?|fork|forkpty|kill|killpg|posix_spawnp?|startfile|plock|mkfifo|mknod)$|^sys\\.(argv|orig_argv|stdin|stdout|stderr|exit|version|version_info|hexversion|implementation|platform|byteorder|maxsize|maxunicode|float_info|int_info|hash_info|float_repr_style|getsizeof|getrecursionlimit|setrecursionlimit|getdefaultencoding|getfilesystemencoding|getfilesystemencodeerrors|path|executable|prefix|base_prefix|exec_prefix|base_exec_prefix|platlibdir|flags|exc_info|exception|last_type|last_value|last_traceback|stdlib_module_names|builtin_module_names|api_version|copyright|excepthook|displayhook|getrefcount|intern|is_finalizing|set_int_max_str_digits|get_int_max_str_digits|getswitchinterval|setswitchinterval|dont_write_bytecode|ps1|ps2|thread_info|warnoptions|tracebacklimit|meta_path|path_hooks|path_importer_cache|setdlopenflags|settrace|setprofile|addaudithook|breakpointhook)$|^shutil\\.(copy|copy2|copyfile|copyfileobj|copymode|copystat|copytree|move|rmtree|chown|disk_usage|which|get_terminal_size|make_archive|unpack_archive|get_archive_formats|get_unpack_formats|ignore_patterns|Error|SameFileError|SpecialFileError|ReadError|RegistryError|COPY_BUFSIZE)$"))
((call function: (_) @_f) @PY-REACH-UNKNOWN
  (#qname-match? @PY-REACH-UNKNOWN "^(os|sys|shutil)\\.[A-Za-z0-9_]+$")
  (#qname-match? @_f "^(builtins\\.)?getattr$")
  (#not-qname-match? @PY-REACH-UNKNOWN "^os\\.(path|sep|altsep|extsep|pathsep|linesep|curdir|pardir|defpath|devnull|name|environ|environb|getenv|getenvb|putenv|unsetenv|getcwd|getcwdb|chdir|listdir|scandir|walk|fwalk|stat|lstat|fstat|stat_result|statvfs|DirEntry|PathLike|fspath|fsencode|fsdecode|makedirs|mkdir|remove|unlink|rmdir|removedirs|rename|renames|replace|chmod|lchmod|fchmod|chown|lchown|fchown|chflags|utime|truncate|ftruncate|symlink|link|readlink|access|[FRWX]_OK|O_[A-Z_]+|SEEK_(SET|CUR|END)|cpu_count|getpid|getppid|getuid|geteuid|getgid|getegid|getlogin|getgroups|umask|urandom|getrandom|get_terminal_size|terminal_size|times|uname|strerror|error|open|close|read|write|fdopen|pipe|isatty|fsync|lseek|sched_getaffinity|getloadavg|supports_[a-z_]+|samestat|device_encoding|system|popen[0-9]?|exec[lv]p?e?|spawn[lv]p?e?|fork|forkpty|kill|killpg|posix_spawnp?|startfile|plock|mkfifo|mknod)$|^sys\\.(argv|orig_argv|stdin|stdout|stderr|exit|version|version_info|hexversion|implementation|platform|byteorder|maxsize|maxunicode|float_info|int_info|hash_info|float_repr_style|getsizeof|getrecursionlimit|setrecursionlimit|getdefaultencoding|getfilesystemencoding|getfilesystemencodeerrors|path|executable|prefix|base_prefix|exec_prefix|base_exec_prefix|platlibdir|flags|exc_info|exception|last_type|last_value|last_traceback|stdlib_module_names|builtin_module_names|api_version|copyright|excepthook|displayhook|getrefcount|intern|is_finalizing|set_int_max_str_digits|get_int_max_str_digits|getswitchinterval|setswitchinterval|dont_write_bytecode|ps1|ps2|thread_info|warnoptions|tracebacklimit|meta_path|path_hooks|path_importer_cache|setdlopenflags|settrace|setprofile|addaudithook|breakpointhook)$|^shutil\\.(copy|copy2|copyfile|copyfileobj|copymode|copystat|copytree|move|rmtree|chown|disk_usage|which|get_terminal_size|make_archive|unpack_archive|get_archive_formats|get_unpack_formats|ignore_patterns|Error|SameFileError|SpecialFileError|ReadError|RegistryError|COPY_BUFSIZE)$"))
((import_from_statement name: [(dotted_name) @PY-REACH-UNKNOWN (aliased_import alias: (identifier) @PY-REACH-UNKNOWN)])
  (#qname-match? @PY-REACH-UNKNOWN "^(os|sys|shutil)\\.[A-Za-z0-9_]+$")
  (#not-qname-match? @PY-REACH-UNKNOWN "^os\\.(path|sep|altsep|extsep|pathsep|linesep|curdir|pardir|defpath|devnull|name|environ|environb|getenv|getenvb|putenv|unsetenv|getcwd|getcwdb|chdir|listdir|scandir|walk|fwalk|stat|lstat|fstat|stat_result|statvfs|DirEntry|PathLike|fspath|fsencode|fsdecode|makedirs|mkdir|remove|unlink|rmdir|removedirs|rename|renames|replace|chmod|lchmod|fchmod|chown|lchown|fchown|chflags|utime|truncate|ftruncate|symlink|link|readlink|access|[FRWX]_OK|O_[A-Z_]+|SEEK_(SET|CUR|END)|cpu_count|getpid|getppid|getuid|geteuid|getgid|getegid|getlogin|getgroups|umask|urandom|getrandom|get_terminal_size|terminal_size|times|uname|strerror|error|open|close|read|write|fdopen|pipe|isatty|fsync|lseek|sched_getaffinity|getloadavg|supports_[a-z_]+|samestat|device_encoding|system|popen[0-9]?|exec[lv]p?e?|spawn[lv]p?e?|fork|forkpty|kill|killpg|posix_spawnp?|startfile|plock|mkfifo|mknod)$|^sys\\.(argv|orig_argv|stdin|stdout|stderr|exit|version|version_info|hexversion|implementation|platform|byteorder|maxsize|maxunicode|float_info|int_info|hash_info|float_repr_style|getsizeof|getrecursionlimit|setrecursionlimit|getdefaultencoding|getfilesystemencoding|getfilesystemencodeerrors|path|executable|prefix|base_prefix|exec_prefix|base_exec_prefix|platlibdir|flags|exc_info|exception|last_type|last_value|last_traceback|stdlib_module_names|builtin_module_names|api_version|copyright|excepthook|displayhook|getrefcount|intern|is_finalizing|set_int_max_str_digits|get_int_max_str_digits|getswitchinterval|setswitchinterval|dont_write_bytecode|ps1|ps2|thread_info|warnoptions|tracebacklimit|meta_path|path_hooks|path_importer_cache|setdlopenflags|settrace|setprofile|addaudithook|breakpointhook)$|^shutil\\.(copy|copy2|copyfile|copyfileobj|copymode|copystat|copytree|move|rmtree|chown|disk_usage|which|get_terminal_size|make_archive|unpack_archive|get_archive_formats|get_unpack_formats|ignore_patterns|Error|SameFileError|SpecialFileError|ReadError|RegistryError|COPY_BUFSIZE)$"))

; the risky corners of known modules, by capability: an import of one, an
; attribute path to one, a name imported from one
(import_statement name: [(dotted_name) @PY-REACH-PROCESS (aliased_import name: (dotted_name) @PY-REACH-PROCESS)]
  (#match? @PY-REACH-PROCESS "^(pydoc|distutils|setuptools|pip|ensurepip|venv|numpy\\.f2py|numpy\\.distutils|matplotlib\\.animation|PIL\\.ImageShow|PIL\\.ImageGrab|pandas\\.io\\.clipboards?|platform\\.(uname|processor|architecture|platform|_[A-Za-z_]+)|uuid\\.(uuid1|getnode|_[A-Za-z_]+)|pandas\\.read_clipboard|asyncio\\.(get_event_loop|new_event_loop|get_running_loop))(\\.|$)"))
(import_from_statement module_name: (dotted_name) @PY-REACH-PROCESS
  (#match? @PY-REACH-PROCESS "^(pydoc|distutils|setuptools|pip|ensurepip|venv|numpy\\.f2py|numpy\\.distutils|matplotlib\\.animation|PIL\\.ImageShow|PIL\\.ImageGrab|pandas\\.io\\.clipboards?|platform\\.(uname|processor|architecture|platform|_[A-Za-z_]+)|uuid\\.(uuid1|getnode|_[A-Za-z_]+)|pandas\\.read_clipboard|asyncio\\.(get_event_loop|new_event_loop|get_running_loop))(\\.|$)"))
((import_from_statement name: [(dotted_name) @PY-REACH-PROCESS (aliased_import alias: (identifier) @PY-REACH-PROCESS)])
  (#qname-match? @PY-REACH-PROCESS "^(platform\\.(uname|processor|architecture|platform|_[A-Za-z_]+)|uuid\\.(uuid1|getnode|_[A-Za-z_]+)|pandas\\.read_clipboard|asyncio\\.(get_event_loop|new_event_loop|get_running_loop))$|^(pydoc|distutils|setuptools|pip|ensurepip|venv|numpy\\.f2py|numpy\\.distutils|matplotlib\\.animation|PIL\\.ImageShow|PIL\\.ImageGrab|pandas\\.io\\.clipboards?)(\\.[A-Za-z0-9_]+)?$"))
((attribute) @PY-REACH-PROCESS
  (#qname-match? @PY-REACH-PROCESS "^(platform\\.(uname|processor|architecture|platform|_[A-Za-z_]+)|uuid\\.(uuid1|getnode|_[A-Za-z_]+)|pandas\\.read_clipboard|asyncio\\.(get_event_loop|new_event_loop|get_running_loop))$|^(pydoc|distutils|setuptools|pip|ensurepip|venv|numpy\\.f2py|numpy\\.distutils|matplotlib\\.animation|PIL\\.ImageShow|PIL\\.ImageGrab|pandas\\.io\\.clipboards?)(\\.[A-Za-z0-9_]+)?$"))
((call function: (_) @_f) @PY-REACH-PROCESS
  (#qname-match? @_f "^(builtins\\.)?getattr$")
  (#qname-match? @PY-REACH-PROCESS "^(platform\\.(uname|processor|architecture|platform|_[A-Za-z_]+)|uuid\\.(uuid1|getnode|_[A-Za-z_]+)|pandas\\.read_clipboard|asyncio\\.(get_event_loop|new_event_loop|get_running_loop))$|^(pydoc|distutils|setuptools|pip|ensurepip|venv|numpy\\.f2py|numpy\\.distutils|matplotlib\\.animation|PIL\\.ImageShow|PIL\\.ImageGrab|pandas\\.io\\.clipboards?)(\\.[A-Za-z0-9_]+)?$"))
(import_statement name: [(dotted_name) @PY-REACH-NETWORK (aliased_import name: (dotted_name) @PY-REACH-NETWORK)]
  (#match? @PY-REACH-NETWORK "^(syslog|asyncore|asynchat|wsgiref|pyarrow\\.(fs|flight)|scipy\\.datasets|logging\\.handlers\\.(SocketHandler|DatagramHandler|SysLogHandler|SMTPHandler|HTTPHandler)|asyncio\\.(open_connection|start_server|open_unix_connection|start_unix_server)|seaborn\\.load_dataset|sklearn\\.datasets\\.fetch_[a-z0-9_]+|statsmodels\\.(api\\.)?datasets\\.get_rdataset|numpy\\.(lib\\.(npyio|_datasource)\\.)?DataSource|pandas\\.read_gbq)(\\.|$)"))
(import_from_statement module_name: (dotted_name) @PY-REACH-NETWORK
  (#match? @PY-REACH-NETWORK "^(syslog|asyncore|asynchat|wsgiref|pyarrow\\.(fs|flight)|scipy\\.datasets|logging\\.handlers\\.(SocketHandler|DatagramHandler|SysLogHandler|SMTPHandler|HTTPHandler)|asyncio\\.(open_connection|start_server|open_unix_connection|start_unix_server)|seaborn\\.load_dataset|sklearn\\.datasets\\.fetch_[a-z0-9_]+|statsmodels\\.(api\\.)?datasets\\.get_rdataset|numpy\\.(lib\\.(npyio|_datasource)\\.)?DataSource|pandas\\.read_gbq)(\\.|$)"))
((import_from_statement name: [(dotted_name) @PY-REACH-NETWORK (aliased_import alias: (identifier) @PY-REACH-NETWORK)])
  (#qname-match? @PY-REACH-NETWORK "^(logging\\.handlers\\.(SocketHandler|DatagramHandler|SysLogHandler|SMTPHandler|HTTPHandler)|asyncio\\.(open_connection|start_server|open_unix_connection|start_unix_server)|seaborn\\.load_dataset|sklearn\\.datasets\\.fetch_[a-z0-9_]+|statsmodels\\.(api\\.)?datasets\\.get_rdataset|numpy\\.(lib\\.(npyio|_datasource)\\.)?DataSource|pandas\\.read_gbq)$|^(syslog|asyncore|asynchat|wsgiref|pyarrow\\.(fs|flight)|scipy\\.datasets)(\\.[A-Za-z0-9_]+)?$"))
((attribute) @PY-REACH-NETWORK
  (#qname-match? @PY-REACH-NETWORK "^(logging\\.handlers\\.(SocketHandler|DatagramHandler|SysLogHandler|SMTPHandler|HTTPHandler)|asyncio\\.(open_connection|start_server|open_unix_connection|start_unix_server)|seaborn\\.load_dataset|sklearn\\.datasets\\.fetch_[a-z0-9_]+|statsmodels\\.(api\\.)?datasets\\.get_rdataset|numpy\\.(lib\\.(npyio|_datasource)\\.)?DataSource|pandas\\.read_gbq)$|^(syslog|asyncore|asynchat|wsgiref|pyarrow\\.(fs|flight)|scipy\\.datasets)(\\.[A-Za-z0-9_]+)?$"))
((call function: (_) @_f) @PY-REACH-NETWORK
  (#qname-match? @_f "^(builtins\\.)?getattr$")
  (#qname-match? @PY-REACH-NETWORK "^(logging\\.handlers\\.(SocketHandler|DatagramHandler|SysLogHandler|SMTPHandler|HTTPHandler)|asyncio\\.(open_connection|start_server|open_unix_connection|start_unix_server)|seaborn\\.load_dataset|sklearn\\.datasets\\.fetch_[a-z0-9_]+|statsmodels\\.(api\\.)?datasets\\.get_rdataset|numpy\\.(lib\\.(npyio|_datasource)\\.)?DataSource|pandas\\.read_gbq)$|^(syslog|asyncore|asynchat|wsgiref|pyarrow\\.(fs|flight)|scipy\\.datasets)(\\.[A-Za-z0-9_]+)?$"))
(import_statement name: [(dotted_name) @PY-REACH-NATIVE (aliased_import name: (dotted_name) @PY-REACH-NATIVE)]
  (#match? @PY-REACH-NATIVE "^(numpy\\.ctypeslib|scipy\\.LowLevelCallable|sys\\.setdlopenflags)(\\.|$)"))
(import_from_statement module_name: (dotted_name) @PY-REACH-NATIVE
  (#match? @PY-REACH-NATIVE "^(numpy\\.ctypeslib|scipy\\.LowLevelCallable|sys\\.setdlopenflags)(\\.|$)"))
((import_from_statement name: [(dotted_name) @PY-REACH-NATIVE (aliased_import alias: (identifier) @PY-REACH-NATIVE)])
  (#qname-match? @PY-REACH-NATIVE "^(scipy\\.LowLevelCallable|sys\\.setdlopenflags)$|^(numpy\\.ctypeslib)(\\.[A-Za-z0-9_]+)?$"))
((attribute) @PY-REACH-NATIVE
  (#qname-match? @PY-REACH-NATIVE "^(scipy\\.LowLevelCallable|sys\\.setdlopenflags)$|^(numpy\\.ctypeslib)(\\.[A-Za-z0-9_]+)?$"))
((call function: (_) @_f) @PY-REACH-NATIVE
  (#qname-match? @_f "^(builtins\\.)?getattr$")
  (#qname-match? @PY-REACH-NATIVE "^(scipy\\.LowLevelCallable|sys\\.setdlopenflags)$|^(numpy\\.ctypeslib)(\\.[A-Za-z0-9_]+)?$"))
(import_statement name: [(dotted_name) @PY-REACH-CODE (aliased_import name: (dotted_name) @PY-REACH-CODE)]
  (#match? @PY-REACH-CODE "^(doctest|timeit|pdb|bdb|profile|cProfile|trace|rlcompleter|pstats|shelve|dill|cloudpickle|jsonpickle|joblib|site|logging\\.config|pandas\\.io\\.pytables|PIL\\.ImageMath|(c|_)?pickle\\._[A-Za-z_]+|marshal\\._[A-Za-z_]+|networkx\\.read_gpickle|pandas\\.(read_hdf|HDFStore)|statsmodels\\.(api\\.)?load_pickle|sys\\.(settrace|setprofile|addaudithook|breakpointhook))(\\.|$)"))
(import_from_statement module_name: (dotted_name) @PY-REACH-CODE
  (#match? @PY-REACH-CODE "^(doctest|timeit|pdb|bdb|profile|cProfile|trace|rlcompleter|pstats|shelve|dill|cloudpickle|jsonpickle|joblib|site|logging\\.config|pandas\\.io\\.pytables|PIL\\.ImageMath|(c|_)?pickle\\._[A-Za-z_]+|marshal\\._[A-Za-z_]+|networkx\\.read_gpickle|pandas\\.(read_hdf|HDFStore)|statsmodels\\.(api\\.)?load_pickle|sys\\.(settrace|setprofile|addaudithook|breakpointhook))(\\.|$)"))
((import_from_statement name: [(dotted_name) @PY-REACH-CODE (aliased_import alias: (identifier) @PY-REACH-CODE)])
  (#qname-match? @PY-REACH-CODE "^((c|_)?pickle\\._[A-Za-z_]+|marshal\\._[A-Za-z_]+|networkx\\.read_gpickle|pandas\\.(read_hdf|HDFStore)|statsmodels\\.(api\\.)?load_pickle|sys\\.(settrace|setprofile|addaudithook|breakpointhook))$|^(doctest|timeit|pdb|bdb|profile|cProfile|trace|rlcompleter|pstats|shelve|dill|cloudpickle|jsonpickle|joblib|site|logging\\.config|pandas\\.io\\.pytables|PIL\\.ImageMath)(\\.[A-Za-z0-9_]+)?$"))
((attribute) @PY-REACH-CODE
  (#qname-match? @PY-REACH-CODE "^((c|_)?pickle\\._[A-Za-z_]+|marshal\\._[A-Za-z_]+|networkx\\.read_gpickle|pandas\\.(read_hdf|HDFStore)|statsmodels\\.(api\\.)?load_pickle|sys\\.(settrace|setprofile|addaudithook|breakpointhook))$|^(doctest|timeit|pdb|bdb|profile|cProfile|trace|rlcompleter|pstats|shelve|dill|cloudpickle|jsonpickle|joblib|site|logging\\.config|pandas\\.io\\.pytables|PIL\\.ImageMath)(\\.[A-Za-z0-9_]+)?$"))
((call function: (_) @_f) @PY-REACH-CODE
  (#qname-match? @_f "^(builtins\\.)?getattr$")
  (#qname-match? @PY-REACH-CODE "^((c|_)?pickle\\._[A-Za-z_]+|marshal\\._[A-Za-z_]+|networkx\\.read_gpickle|pandas\\.(read_hdf|HDFStore)|statsmodels\\.(api\\.)?load_pickle|sys\\.(settrace|setprofile|addaudithook|breakpointhook))$|^(doctest|timeit|pdb|bdb|profile|cProfile|trace|rlcompleter|pstats|shelve|dill|cloudpickle|jsonpickle|joblib|site|logging\\.config|pandas\\.io\\.pytables|PIL\\.ImageMath)(\\.[A-Za-z0-9_]+)?$"))
(import_statement name: [(dotted_name) @PY-REACH-COMPUTED (aliased_import name: (dotted_name) @PY-REACH-COMPUTED)]
  (#match? @PY-REACH-COMPUTED "^(inspect|gc|operator\\.(attrgetter|methodcaller))(\\.|$)"))
(import_from_statement module_name: (dotted_name) @PY-REACH-COMPUTED
  (#match? @PY-REACH-COMPUTED "^(inspect|gc|operator\\.(attrgetter|methodcaller))(\\.|$)"))
((import_from_statement name: [(dotted_name) @PY-REACH-COMPUTED (aliased_import alias: (identifier) @PY-REACH-COMPUTED)])
  (#qname-match? @PY-REACH-COMPUTED "^(operator\\.(attrgetter|methodcaller))$|^(inspect|gc)(\\.[A-Za-z0-9_]+)?$"))
((attribute) @PY-REACH-COMPUTED
  (#qname-match? @PY-REACH-COMPUTED "^(operator\\.(attrgetter|methodcaller))$|^(inspect|gc)(\\.[A-Za-z0-9_]+)?$"))
((call function: (_) @_f) @PY-REACH-COMPUTED
  (#qname-match? @_f "^(builtins\\.)?getattr$")
  (#qname-match? @PY-REACH-COMPUTED "^(operator\\.(attrgetter|methodcaller))$|^(inspect|gc)(\\.[A-Za-z0-9_]+)?$"))

; an object reached through another module's namespace: numpy.lib.npyio.os,
; tempfile._os (a module a known module imported for itself)
((attribute) @PY-REACH-UNKNOWN
  (#qname-match? @PY-REACH-UNKNOWN "^(__future__|math|cmath|statistics|json|csv|re|datetime|time|calendar|zoneinfo|collections|itertools|functools|operator|string|textwrap|decimal|fractions|random|heapq|bisect|array|copy|dataclasses|enum|typing|typing_extensions|abc|numbers|pprint|reprlib|unicodedata|hashlib|hmac|base64|binascii|struct|zlib|gzip|bz2|lzma|zipfile|tarfile|io|pathlib|glob|fnmatch|difflib|secrets|warnings|contextlib|traceback|weakref|locale|gettext|argparse|optparse|getopt|html|xml|sqlite3|stat|keyword|token|tokenize|ast|dis|colorsys|graphlib|shlex|queue|threading|sched|contextvars|quopri|codecs|mimetypes|email|mailbox|plistlib|configparser|tomllib|filecmp|fileinput|tempfile|errno|copyreg|types|atexit|signal|getpass|pwd|grp|wave|posixpath|ntpath|opcode|encodings|dbm|sysconfig|concurrent|asyncio|logging|numpy|pandas|matplotlib|mpl_toolkits|scipy|seaborn|sklearn|statsmodels|PIL|pyarrow|tqdm|dateutil|pytz|tzdata|tabulate|openpyxl|networkx|more_itertools|attr|attrs)\\.([A-Za-z0-9_]+\\.)*_?(os|sys|shutil|platform|uuid|pickle|_pickle|cPickle|marshal|subprocess|pty|multiprocessing|pexpect|popen2|commands|sh|plumbum|socket|_socket|socketserver|ssl|urllib|urllib2|urllib3|requests|httpx|aiohttp|http|httplib|ftplib|smtplib|smtpd|poplib|imaplib|nntplib|telnetlib|xmlrpc|paramiko|websocket|websockets|asyncssh|pycurl|webbrowser|ctypes|_ctypes|cffi|_posixsubprocess|posix|nt|_winapi|_thread|importlib|imp|runpy|code|codeop|zipimport|pkgutil|builtins|__builtin__|pydoc|inspect|gc)$"))

; computed access: a name not written in the code reaches all of its object
((call function: (_) @_f arguments: (argument_list . (_) . (_) @_n)) @PY-REACH-COMPUTED
  (#qname-match? @_f "^(builtins\\.)?(getattr|setattr|delattr)$")
  (#not-literal? @_n))
((subscript value: (call function: (_) @_f) subscript: (_) @_n) @PY-REACH-COMPUTED
  (#qname-match? @_f "^(builtins\\.)?(globals|locals|vars)$")
  (#not-literal? @_n))
((call function: (attribute object: (call function: (_) @_f) attribute: (identifier) @_m) arguments: (argument_list . (_) @_n)) @PY-REACH-COMPUTED
  (#qname-match? @_f "^(builtins\\.)?(globals|locals|vars)$")
  (#match? @_m "^(get|pop|setdefault)$")
  (#not-literal? @_n))
; getattr, setattr and delattr as values (functools.reduce(getattr, ...)),
; and a module kiln knows only in part handed on where its uses are not seen
; (x = os is followed as an alias, but not as A.x when it is a class's;
; getattr(os, 'getcwd') with a plain name is judged as os.getcwd)
((call function: (_) @_f arguments: (argument_list (identifier) @PY-REACH-COMPUTED))
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$")
  (#not-qname-match? @_f "^(builtins\\.)?(getattr|hasattr)$"))
((class_definition superclasses: (argument_list (identifier) @PY-REACH-COMPUTED))
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((list (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((tuple (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((set (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((expression_list (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((return_statement (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((conditional_expression (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((boolean_operator (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((keyword_argument value: (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((pair value: (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((lambda body: (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((default_parameter value: (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((typed_default_parameter value: (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((named_expression value: (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))
((assignment right: (identifier) @PY-REACH-COMPUTED)
  (#qname-match? @PY-REACH-COMPUTED "^((builtins\\.)?(getattr|setattr|delattr)|os|sys|shutil|pickle|_pickle|marshal|inspect|gc|posix)$"))

; single corners
; help() pages through pydoc's pager, which runs $PAGER, pager or less on a terminal
((call function: (identifier) @PY-REACH-PROCESS)
  (#qname-match? @PY-REACH-PROCESS "^(builtins\\.)?help$"))
; sys.path changed: a later import runs whatever file it finds first
((call function: (attribute object: (_) @_p) @PY-REACH-CODE)
  (#qname-match? @_p "^sys\\.path$")
  (#qname-match? @PY-REACH-CODE "^sys\\.path\\.(insert|append|extend|__setitem__|__iadd__)$"))
((assignment left: [(attribute) (subscript)] @PY-REACH-CODE)
  (#qname-match? @PY-REACH-CODE "^sys\\.path(\\..*)?$"))
((augmented_assignment left: (attribute) @PY-REACH-CODE)
  (#qname-match? @PY-REACH-CODE "^sys\\.path$"))
; numpy.load(..., allow_pickle=True) unpickles object arrays
((call function: (_) @PY-REACH-CODE arguments: (argument_list (keyword_argument name: (identifier) @_k value: (_) @_v)))
  (#qname-match? @PY-REACH-CODE "^numpy\\.(load|lib\\.format\\.read_array)$")
  (#match? @_k "^allow_pickle$")
  (#not-match? @_v "^(False|0)$"))
; sqlite3 loads extensions: shared libraries
((call function: (attribute attribute: (identifier) @PY-REACH-NATIVE))
  (#match? @PY-REACH-NATIVE "^(enable_load_extension|load_extension)$"))
; matplotlib's usetex runs latex, dvipng and ghostscript; a module:// backend imports a module
((string) @PY-REACH-PROCESS
  (#match? @PY-REACH-PROCESS "^text\\.usetex$"))
((keyword_argument name: (identifier) @PY-REACH-PROCESS value: (_) @_v)
  (#match? @PY-REACH-PROCESS "^usetex$")
  (#not-match? @_v "^(False|0|None)$"))
((call function: (_) @PY-REACH-CODE arguments: (argument_list . (_) @_b))
  (#qname-match? @PY-REACH-CODE "^matplotlib\\.(use|pyplot\\.switch_backend)$")
  (#match? @_b "^module://"))
; pandas' eval and query run an expression: one built at run time, or one that
; names interpreter internals, is code kiln has not seen
((call function: (attribute attribute: (identifier) @_m) @PY-REACH-CODE arguments: (argument_list . (_) @_e))
  (#match? @_m "^(eval|query)$")
  (#not-literal? @_e))
((call function: (attribute attribute: (identifier) @_m) @PY-REACH-CODE arguments: (argument_list . (string) @_e))
  (#match? @_m "^(eval|query)$")
  (#match? @_e "__"))
((call function: (attribute attribute: (identifier) @PY-REACH-PROCESS))
  (#match? @PY-REACH-PROCESS "^to_clipboard$"))

; --- loops with no way out (a yield hands control back to the consumer:
; a generator's endless loop is how it produces a stream, not a hang)
((while_statement condition: [(true) (integer)] @PY-LOOP-UNBOUNDED body: (block) @_b)
  (#not-match? @PY-LOOP-UNBOUNDED "^0+$")
  (#not-contains? @_b "^(break_statement|return_statement|raise_statement|yield)$" "^(function_definition|class_definition|lambda|while_statement|for_statement)$"))

; --- a coding declaration (PEP 263: a comment on the first or second line)
; naming any encoding but UTF-8 or ASCII: CPython would read other code
; than the editor shows. kiln's runners refuse one too
; (sandbox/guest/source_coding.py); this says so before a run. Anchored, in
; re_prefix.c's subset: the allowed form is the comment's first
; "coding" followed by ':' or '=' (no "g:" or "g=" before it), then a
; UTF-8 or ASCII name, then a byte that cannot continue a name.
((module . (comment) @PY-SOURCE-ENCODING)
  (#match? @PY-SOURCE-ENCODING "^#[	 -~]*coding[:=][ 	]*[-_.a-zA-Z0-9]")
  (#not-match? @PY-SOURCE-ENCODING "^#([	 -fh-~]|g+[	 -9;<>-fh-~])*g*coding[:=][ 	]*([uU][tT][fF]([-_]?8([-_][-_.a-zA-Z0-9]*)?)?|[uU]8|[cC][pP]65001|([uU][sS][-_])?[aA][sS][cC][iI][iI]|646)([	 -,/:-@`{-~]|$)"))
((module . (comment) . (comment) @PY-SOURCE-ENCODING)
  (#match? @PY-SOURCE-ENCODING "^#[	 -~]*coding[:=][ 	]*[-_.a-zA-Z0-9]")
  (#not-match? @PY-SOURCE-ENCODING "^#([	 -fh-~]|g+[	 -9;<>-fh-~])*g*coding[:=][ 	]*([uU][tT][fF]([-_]?8([-_][-_.a-zA-Z0-9]*)?)?|[uU]8|[cC][pP]65001|([uU][sS][-_])?[aA][sS][cC][iI][iI]|646)([	 -,/:-@`{-~]|$)"))
