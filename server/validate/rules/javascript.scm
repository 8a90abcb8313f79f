; JavaScript policy queries. #qname-match? sees through require() and
; import bindings: const {exec} = require('child_process') makes exec
; "child_process.exec"; 'node:' prefixes are dropped and '/' becomes '.'.
; See python.scm for the capture and predicate conventions.

; --- modules
((call_expression) @JS-CHILD-PROCESS
  (#qname-match? @JS-CHILD-PROCESS "^(child_process|cluster)$"))
((import_statement source: (string) @JS-CHILD-PROCESS)
  (#match? @JS-CHILD-PROCESS "^(node:)?(child_process|cluster)$"))
((call_expression function: (_) @JS-CHILD-PROCESS)
  (#qname-match? @JS-CHILD-PROCESS "^(child_process|cluster)\\."))

((call_expression) @JS-NETWORK
  (#qname-match? @JS-NETWORK "^(net|http|https|http2|dgram|tls|dns|dns\\.promises|inspector|undici|axios|node-fetch|request|got|ws|socket\\.io-client|ftp|ssh2|nodemailer)$"))
((import_statement source: (string) @JS-NETWORK)
  (#match? @JS-NETWORK "^(node:)?(net|http|https|http2|dgram|tls|dns|dns/promises|inspector|undici|axios|node-fetch|request|got|ws|socket\\.io-client|ftp|ssh2|nodemailer)$"))
((call_expression function: (_) @JS-NETWORK)
  (#qname-match? @JS-NETWORK "^(fetch|XMLHttpRequest|WebSocket|EventSource)$"))
((new_expression constructor: (_) @JS-NETWORK)
  (#qname-match? @JS-NETWORK "^(XMLHttpRequest|WebSocket|EventSource)$"))

((call_expression) @JS-EVAL
  (#qname-match? @JS-EVAL "^(vm|repl|worker_threads|module)$"))
((import_statement source: (string) @JS-EVAL)
  (#match? @JS-EVAL "^(node:)?(vm|repl|worker_threads|module)$"))
((call_expression function: (_) @JS-EVAL)
  (#qname-match? @JS-EVAL "^(eval|Function|vm\\..*|execScript)$"))
((new_expression constructor: (_) @JS-EVAL)
  (#qname-match? @JS-EVAL "^(Function|vm\\.Script|Worker|AsyncFunction|GeneratorFunction)$"))
((call_expression function: (_) @_f arguments: (arguments . [(string) (template_string) (binary_expression)] @JS-EVAL))
  (#qname-match? @_f "^(setTimeout|setInterval|setImmediate)$"))
((identifier) @JS-EVAL
  (#eq? @JS-EVAL "eval"))
((arguments (identifier) @JS-EVAL)
  (#qname-match? @JS-EVAL "^(eval|Function)$"))
((variable_declarator value: (identifier) @JS-EVAL)
  (#qname-match? @JS-EVAL "^(eval|Function)$"))

((call_expression function: (_) @_f arguments: (arguments . (_) @JS-DYNAMIC-REQUIRE))
  (#qname-match? @_f "^(require|.*\\.require|.*\\._load|.*\\.getBuiltinModule)$")
  (#not-literal? @JS-DYNAMIC-REQUIRE))
((call_expression function: (import) arguments: (arguments . (_) @JS-DYNAMIC-REQUIRE))
  (#not-literal? @JS-DYNAMIC-REQUIRE))

((member_expression object: (member_expression property: (property_identifier) @_a) property: (property_identifier) @JS-PROTOTYPE-WALK)
  (#eq? @_a "constructor")
  (#eq? @JS-PROTOTYPE-WALK "constructor"))
((subscript_expression index: (_) @JS-PROTOTYPE-WALK)
  (#any-of? @JS-PROTOTYPE-WALK "constructor" "__proto__"))
; Walking through __proto__ (x.__proto__.constructor, a.__proto__.polluted)
; is refused; setting it (d.__proto__ = b, TypeScript's __extends helper in
; countless compiled files) only picks a prototype and is not.
((member_expression object: (member_expression property: (property_identifier) @JS-PROTOTYPE-WALK))
  (#eq? @JS-PROTOTYPE-WALK "__proto__"))
((member_expression property: (property_identifier) @JS-PROTOTYPE-WALK)
  (#any-of? @JS-PROTOTYPE-WALK "__defineGetter__" "__lookupGetter__"))

((call_expression function: (_) @JS-NATIVE)
  (#qname-match? @JS-NATIVE "^process\\.(binding|_linkedBinding|dlopen)$"))
((member_expression) @JS-NATIVE
  (#qname-match? @JS-NATIVE "^process\\.(binding|_linkedBinding|dlopen)$"))

((call_expression function: (_) @JS-PROCESS-CONTROL)
  (#qname-match? @JS-PROCESS-CONTROL "^process\\.(kill|abort|setuid|setgid|seteuid|setegid|setgroups|chdir)$"))

; --- files
((call_expression function: (_) @_f arguments: (arguments . (_) @JS-FS-WRITE-OUTSIDE))
  (#qname-match? @_f "^fs(\\.promises)?\\.(writeFile|writeFileSync|appendFile|appendFileSync|createWriteStream|mkdir|mkdirSync|rm|rmSync|rmdir|rmdirSync|unlink|unlinkSync|symlink|symlinkSync|chmod|chmodSync|chown|chownSync|truncate|truncateSync|utimes|utimesSync|mkdtemp|mkdtempSync)$")
  (#outside-workspace? @JS-FS-WRITE-OUTSIDE))
((call_expression function: (_) @_f arguments: (arguments . (_) . (_) @JS-FS-WRITE-OUTSIDE))
  (#qname-match? @_f "^fs(\\.promises)?\\.(rename|renameSync|copyFile|copyFileSync|cp|cpSync|link|linkSync|symlink|symlinkSync)$")
  (#outside-workspace? @JS-FS-WRITE-OUTSIDE))
((call_expression function: (_) @_f arguments: (arguments . (_) @JS-FS-WRITE-OUTSIDE . (_) @_flags))
  (#qname-match? @_f "^fs(\\.promises)?\\.(open|openSync)$")
  (#match? @_flags "[wa+]")
  (#outside-workspace? @JS-FS-WRITE-OUTSIDE))

((call_expression function: (_) @JS-FS-WRITE)
  (#qname-match? @JS-FS-WRITE "^fs(\\.promises)?\\.(writeFile|writeFileSync|appendFile|appendFileSync|createWriteStream|mkdir|mkdirSync|rename|renameSync|copyFile|copyFileSync|cp|cpSync|symlink|symlinkSync|link|linkSync|truncate|truncateSync|mkdtemp|mkdtempSync)$"))

((call_expression function: (_) @JS-FS-DELETE)
  (#qname-match? @JS-FS-DELETE "^fs(\\.promises)?\\.(rm|rmSync|rmdir|rmdirSync|unlink|unlinkSync|chmod|chmodSync|lchmod|lchmodSync|chown|chownSync|lchown|lchownSync)$"))

; --- loops with no way out
((while_statement condition: (parenthesized_expression [(true) (number)] @JS-LOOP-UNBOUNDED) body: (_) @_b)
  (#not-match? @JS-LOOP-UNBOUNDED "^0+$")
  (#not-contains? @_b "^(break_statement|return_statement|throw_statement|yield_expression)$" "^(function_declaration|function_expression|generator_function_declaration|generator_function|arrow_function|method_definition|class_body|while_statement|for_statement|for_in_statement|do_statement)$"))
((for_statement "for" @JS-LOOP-UNBOUNDED condition: (empty_statement) body: (_) @_b)
  (#not-contains? @_b "^(break_statement|return_statement|throw_statement|yield_expression)$" "^(function_declaration|function_expression|generator_function_declaration|generator_function|arrow_function|method_definition|class_body|while_statement|for_statement|for_in_statement|do_statement)$"))

; --- reach: what the code can reach beyond the modules, process members
; and globals known not to start processes, connect, load native code or
; run code. The modules other rules judge (child_process, net, vm, ...)
; are theirs; a module's file writes are judged by the fs rules above.
((call_expression) @JS-REACH-MODULE
  (#qname-match? @JS-REACH-MODULE ".")
  (#not-qname-match? @JS-REACH-MODULE "^(assert|assert\\.strict|buffer|console|constants|crypto|diagnostics_channel|events|fs|fs\\.promises|os|path|path\\.posix|path\\.win32|perf_hooks|punycode|querystring|readline|readline\\.promises|stream|stream\\.promises|stream\\.web|stream\\.consumers|string_decoder|sys|timers|timers\\.promises|url|util|util\\.types|zlib|async_hooks|test)$")
  (#not-qname-match? @JS-REACH-MODULE "^(child_process|cluster|net|http|https|http2|dgram|tls|dns|dns\\.promises|inspector|undici|axios|node-fetch|request|got|ws|socket\\.io-client|ftp|ssh2|nodemailer|vm|repl|worker_threads|module)$"))
((import_statement source: (string) @JS-REACH-MODULE)
  (#not-match? @JS-REACH-MODULE "^(node:)?(assert|assert/strict|buffer|console|constants|crypto|diagnostics_channel|events|fs|fs/promises|os|path|path/posix|path/win32|perf_hooks|punycode|querystring|readline|readline/promises|stream|stream/promises|stream/web|stream/consumers|string_decoder|sys|timers|timers/promises|url|util|util/types|zlib|async_hooks|test)$")
  (#not-match? @JS-REACH-MODULE "^(node:)?(child_process|cluster|net|http|https|http2|dgram|tls|dns|dns/promises|inspector|undici|axios|node-fetch|request|got|ws|socket\\.io-client|ftp|ssh2|nodemailer|vm|repl|worker_threads|module)$"))
((export_statement source: (string) @JS-REACH-MODULE)
  (#not-match? @JS-REACH-MODULE "^(node:)?(assert|assert/strict|buffer|console|constants|crypto|diagnostics_channel|events|fs|fs/promises|os|path|path/posix|path/win32|perf_hooks|punycode|querystring|readline|readline/promises|stream|stream/promises|stream/web|stream/consumers|string_decoder|sys|timers|timers/promises|url|util|util/types|zlib|async_hooks|test)$"))

; process members beyond its plain information, streams, exit and events.
((member_expression) @JS-REACH-PROCESS
  (#qname-match? @JS-REACH-PROCESS "^process\\.")
  (#not-qname-match? @JS-REACH-PROCESS "^process\\.(env|argv|argv0|execArgv|execPath|stdout|stderr|stdin|exit|exitCode|nextTick|hrtime|memoryUsage|cpuUsage|resourceUsage|uptime|cwd|platform|arch|version|versions|release|features|config|pid|ppid|title|on|once|off|emit|emitWarning|addListener|removeListener|removeAllListeners|listeners|listenerCount|prependListener|prependOnceListener|setMaxListeners|getMaxListeners|umask|getuid|geteuid|getgid|getegid|getgroups|allowedNodeEnvironmentFlags|noDeprecation|throwDeprecation|traceDeprecation|browser|emitWarning|setUncaughtExceptionCaptureCallback|hasUncaughtExceptionCaptureCallback|availableMemory|constrainedMemory|report|sourceMapsEnabled|loadEnvFile)(\\..*)?$")
  (#not-qname-match? @JS-REACH-PROCESS "^process\\.(binding|_linkedBinding|dlopen|kill|abort|setuid|setgid|seteuid|setegid|setgroups|chdir|getBuiltinModule|mainModule)$"))

; Computed access: a property of process, the global object, require or
; a module whose name is not a constant reaches everything they reach.
((subscript_expression object: (identifier) @_o index: (_) @_i) @JS-REACH-COMPUTED
  (#any-of? @_o "process" "globalThis" "global" "window" "self" "require" "module" "Reflect")
  (#not-literal? @_i))
((subscript_expression object: (identifier) @_o index: (_) @_i) @JS-REACH-COMPUTED
  (#qname-match? @_o "^(fs|fs\\.promises|os|util|crypto|zlib|perf_hooks)$")
  (#not-literal? @_i))
((call_expression function: (_) @_f arguments: (arguments . (_) . (_) @_i)) @JS-REACH-COMPUTED
  (#qname-match? @_f "^Reflect\\.(get|getOwnPropertyDescriptor)$")
  (#not-literal? @_i))

; The constructor of any function value is Function, which runs a
; string as code: (() => {}).constructor('...'), new [].map.constructor.
((call_expression function: (member_expression property: (property_identifier) @_p) @JS-REACH-FUNCTION)
  (#eq? @_p "constructor"))
((new_expression constructor: (member_expression object: (_) @_o property: (property_identifier) @_p) @JS-REACH-FUNCTION)
  (#eq? @_p "constructor")
  (#not-eq? @_o "this"))
((variable_declarator value: (member_expression object: (_) @_o property: (property_identifier) @_p) @JS-REACH-FUNCTION)
  (#eq? @_p "constructor")
  (#not-eq? @_o "this"))
((call_expression function: (_) @JS-REACH-FUNCTION)
  (#qname-match? @JS-REACH-FUNCTION "^(WebAssembly\\.(compile|compileStreaming|instantiate|instantiateStreaming)|Reflect\\.construct)$"))
((new_expression constructor: (_) @JS-REACH-FUNCTION)
  (#qname-match? @JS-REACH-FUNCTION "^WebAssembly\\.(Module|Instance)$"))
