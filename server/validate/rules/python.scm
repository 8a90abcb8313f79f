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
