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
  (#qname-match? @_f "^(require|.*\\.require|.*\\._load)$")
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
