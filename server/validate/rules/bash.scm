; bash policy queries. The constant value of a word is compared, however
; it is quoted (c""url, 'curl', $'\x63url') or assigned (c=curl; $c).
; See python.scm for the capture and predicate conventions.

; --- network tools, also behind env/sudo/xargs/timeout/...
((command name: (command_name) @SH-NETWORK)
  (#match? @SH-NETWORK "^(.*/)?(curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|telnet|ftp|tftp|socat|nmap|ping|dig|nslookup|host|aria2c|lynx|links|w3m|httpie|http|mail|sendmail)$"))
((command name: (command_name) @_w argument: (_) @SH-NETWORK)
  (#match? @_w "^(.*/)?(env|command|exec|nohup|sudo|doas|xargs|timeout|nice|busybox|time|stdbuf|setsid|watch|parallel|builtin)$")
  (#match? @SH-NETWORK "^(.*/)?(curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|telnet|ftp|socat|nmap)$"))
((file_redirect destination: (_) @SH-NETWORK)
  (#match? @SH-NETWORK "^/dev/(tcp|udp)/"))

; --- deleting and permissions
((command name: (command_name) @SH-DELETE)
  (#match? @SH-DELETE "^(.*/)?(rm|rmdir|unlink|srm)$"))
((command name: (command_name) @_w argument: (_) @SH-DELETE)
  (#match? @_w "^(.*/)?(env|command|exec|nohup|sudo|doas|xargs|timeout|nice|busybox|time|parallel)$")
  (#match? @SH-DELETE "^(.*/)?(rm|rmdir|unlink)$"))
((command name: (command_name) @_f argument: (_) @SH-DELETE)
  (#match? @_f "^(.*/)?find$")
  (#any-of? @SH-DELETE "-delete" "rm" "/bin/rm"))
((command name: (command_name) @SH-PERMISSIONS)
  (#match? @SH-PERMISSIONS "^(.*/)?(chmod|chown|chgrp|chattr|setfacl)$"))
((command name: (command_name) @SH-DISK)
  (#match? @SH-DISK "^(.*/)?(dd|mkfs(\\..*)?|mke2fs|mkswap|shred|wipefs|fdisk|sfdisk|parted|losetup|blkdiscard|hdparm)$"))
((command name: (command_name) @_w argument: (_) @SH-DISK)
  (#match? @_w "^(.*/)?(env|command|builtin|exec|nohup|sudo|doas|xargs|timeout|nice|busybox|time|stdbuf|setsid|parallel)$")
  (#match? @SH-DISK "^(.*/)?(dd|mkfs(\\..*)?|mke2fs|mkswap|shred|wipefs|fdisk|sfdisk|parted|losetup|blkdiscard|hdparm)$"))

; --- writing outside the workspace
((file_redirect [">" ">>" "&>" "&>>" ">|"] destination: (_) @SH-WRITE-OUTSIDE)
  (#outside-workspace? @SH-WRITE-OUTSIDE))
((command name: (command_name) @_n argument: (_) @SH-WRITE-OUTSIDE)
  (#match? @_n "^(.*/)?(rm|rmdir|unlink|touch|mkdir|tee|truncate|chmod|chown|chgrp|shred)$")
  (#not-match? @SH-WRITE-OUTSIDE "^-")
  (#outside-workspace? @SH-WRITE-OUTSIDE))
((command name: (command_name) @_n argument: (_) @SH-WRITE-OUTSIDE .)
  (#match? @_n "^(.*/)?(cp|mv|ln|install|rsync)$")
  (#outside-workspace? @SH-WRITE-OUTSIDE))
((command name: (command_name) @_n argument: (_) @SH-WRITE-OUTSIDE)
  (#match? @_n "^(.*/)?dd$")
  (#match? @SH-WRITE-OUTSIDE "^of="))
((command name: (command_name) @_n argument: (_) @_a . argument: (_) @SH-WRITE-OUTSIDE)
  (#match? @_n "^(.*/)?(sed|perl)$")
  (#match? @_a "^-[a-zA-Z]*i")
  (#outside-workspace? @SH-WRITE-OUTSIDE))

((file_redirect [">" ">>" "&>" "&>>" ">|"] destination: (_) @SH-WRITE)
  (#not-match? @SH-WRITE "^/dev/(null|stdout|stderr|fd/[0-9]+)$"))
((command name: (command_name) @SH-WRITE)
  (#match? @SH-WRITE "^(.*/)?(tee|touch|mkdir|cp|mv|ln|install|truncate)$"))

; --- code from strings
((command name: (command_name) @SH-EVAL)
  (#match? @SH-EVAL "^(eval|source|\\.)$"))
((command name: (command_name) @_w argument: (_) @SH-EVAL)
  (#match? @_w "^(.*/)?(command|builtin|env|exec|nohup|sudo|doas|xargs|timeout|nice|busybox|time|stdbuf|setsid)$")
  (#match? @SH-EVAL "^(eval|source|\\.)$"))
((command name: (command_name) @_n argument: (_) @SH-EVAL)
  (#match? @_n "^(.*/)?(ba|da|z|k|c|tc|fi|a)?sh$")
  (#eq? @SH-EVAL "-c"))
((command name: (command_name) @_n argument: (process_substitution) @SH-EVAL)
  (#match? @_n "^(.*/)?(ba|da|z|k|c|tc|fi|a)?sh$"))
((pipeline (_) (command name: (command_name) @SH-PIPE-SHELL))
  (#match? @SH-PIPE-SHELL "^(.*/)?((ba|da|z|k|c|tc|fi|a)?sh|python[0-9.]*|perl|ruby|node|php|lua|tclsh|source)$"))
((command name: (command_name) @SH-PIPE-SHELL redirect: (herestring_redirect))
  (#match? @SH-PIPE-SHELL "^(.*/)?((ba|da|z|k|c|tc|fi|a)?sh|python[0-9.]*|perl|ruby|node|php)$"))
((pipeline (_) (command name: (command_name) @_w argument: (_) @SH-PIPE-SHELL))
  (#match? @_w "^(.*/)?(env|command|exec|sudo|xargs|nohup|busybox)$")
  (#match? @SH-PIPE-SHELL "^(.*/)?((ba|da|z|k|c|tc|fi|a)?sh|python[0-9.]*|perl|ruby|node)$"))
((command name: (command_name (concatenation) @SH-DYNAMIC-COMMAND)))
((command name: (command_name) @SH-DYNAMIC-COMMAND)
  (#match? @SH-DYNAMIC-COMMAND "[*?[]|^alias$")
  (#not-match? @SH-DYNAMIC-COMMAND "^\\[\\[?$"))
((command name: (command_name [(simple_expansion) (expansion) (command_substitution) (string) (raw_string) (ansi_c_string)] @SH-DYNAMIC-COMMAND)))

; --- processes and privileges
((command name: (command_name) @SH-PROCESS)
  (#match? @SH-PROCESS "^(.*/)?(kill|killall|pkill|nohup|disown|setsid|crontab|at|batch|systemctl|service|sudo|su|doas|chroot|nsenter|unshare|mount|umount|insmod|modprobe|reboot|shutdown|halt|poweroff)$"))
((command name: (command_name) @_w argument: (_) @SH-PROCESS)
  (#match? @_w "^(.*/)?(env|command|builtin|exec|xargs|timeout|nice|busybox|time|stdbuf|parallel|watch)$")
  (#match? @SH-PROCESS "^(.*/)?(kill|killall|pkill|nohup|disown|setsid|crontab|at|batch|systemctl|service|sudo|su|doas|chroot|nsenter|unshare|mount|umount|insmod|modprobe|reboot|shutdown|halt|poweroff)$"))
((command name: (command_name) @_n argument: (_) @SH-INTERPRETER)
  (#match? @_n "^(.*/)?(python[0-9.]*|node|nodejs|perl|ruby|php|lua)$")
  (#any-of? @SH-INTERPRETER "-c" "-e" "--eval" "-E" "-r"))

; --- reach: what the code can do beyond the plain text and file tools.
; A command is allowed without a word only when it is on this list of
; tools known not to start other programs, connect, load native code or
; run code (the file tools' paths are judged by the rules above); a
; function the snippet defines has no qualified name (its body is judged
; where it stands); a computed name is SH-DYNAMIC-COMMAND's; commands
; other rules judge (network, process, disk, eval) are theirs. A reserved
; word read as a command name is a syntax error, which is reported as one.
((command name: (command_name) @SH-REACH-COMMAND)
  (#qname-match? @SH-REACH-COMMAND ".")
  (#not-match? @SH-REACH-COMMAND "^(if|then|else|elif|fi|case|esac|for|select|while|until|do|done|in|function|coproc|\\{|\\}|!)$")
  (#not-match? @SH-REACH-COMMAND "^((/usr)?(/local)?/s?bin/)?(echo|printf|cat|head|tail|grep|egrep|fgrep|sort|uniq|wc|cut|tr|paste|join|comm|column|fold|fmt|nl|rev|tac|seq|shuf|split|csplit|expand|unexpand|numfmt|factor|yes|date|basename|dirname|realpath|readlink|pathchk|ls|stat|du|df|file|md5sum|sha1sum|sha224sum|sha256sum|sha384sum|sha512sum|b2sum|cksum|sum|base64|base32|basenc|od|hexdump|xxd|iconv|diff|cmp|test|\\[|true|false|:|read|cd|pwd|pushd|popd|dirs|mkdir|rmdir|cp|mv|rm|touch|tee|ln|truncate|install|jq|bc|expr|sleep|wait|export|local|declare|typeset|readonly|set|unset|shift|return|exit|break|continue|shopt|getopts|mapfile|readarray|type|hash|printenv|uname|whoami|id|groups|nproc|locale|tty|sed|awk|gawk|mawk|nawk|find|gzip|gunzip|zcat|bzip2|bunzip2|bzcat|xz|unxz|xzcat|compgen|complete|compopt|caller|times|trap|umask|ulimit|help|logname|hostname|arch|getconf|tar|lsblk|findmnt|lsns|ipcs|ps|uuidgen|look|w|who|users|xargs|env|nice|timeout|stdbuf|command|builtin|exec|time)$")
  (#not-match? @SH-REACH-COMMAND "^(.*/)?((ba|da|z|k|c|tc|fi|a)?sh|python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php|lua|luajit|tclsh|wish|Rscript|R|julia|java|jshell|guile|racket|osascript|pwsh|make|gcc|cc|clang|tcc|g\\+\\+)$")
  (#not-match? @SH-REACH-COMMAND "^(eval|source|\\.|alias|let)$|^(.*/)?(curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|telnet|ftp|tftp|socat|nmap|ping|dig|nslookup|host|aria2c|lynx|links|w3m|httpie|http|mail|sendmail|unlink|srm|chmod|chown|chgrp|chattr|setfacl|dd|mkfs(\\..*)?|mke2fs|mkswap|shred|wipefs|fdisk|sfdisk|parted|losetup|blkdiscard|hdparm|kill|killall|pkill|nohup|disown|setsid|crontab|at|batch|systemctl|service|sudo|su|doas|chroot|nsenter|unshare|mount|umount|insmod|modprobe|reboot|shutdown|halt|poweroff)$"))
; An interpreter or compiler runs code kiln has not checked: a script
; file, a here-doc (python3 <<'EOF'), standard input.
((command name: (command_name) @SH-REACH-INTERPRETER)
  (#qname-match? @SH-REACH-INTERPRETER ".")
  (#match? @SH-REACH-INTERPRETER "^(.*/)?((ba|da|z|k|c|tc|fi|a)?sh|python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php|lua|luajit|tclsh|wish|Rscript|R|julia|java|jshell|guile|racket|osascript|pwsh|make|gcc|cc|clang|tcc|g\\+\\+)$"))
;  Running another command: xargs, env, nice, timeout, stdbuf, command,
; builtin, exec and time run the command they are given, judged as if it
; stood first: their first argument, or the second after one option
; (xargs -0 cmd; command -v and type only look a name up).
((command name: (command_name) @_w . argument: (_) @SH-REACH-COMMAND)
  (#match? @_w "^(.*/)?(xargs|env|nice|timeout|stdbuf|command|builtin|exec|time)$")
  (#not-match? @SH-REACH-COMMAND "^-|=|^[0-9.]+[smhd]?$|^((/usr)?(/local)?/s?bin/)?(echo|printf|cat|head|tail|grep|egrep|fgrep|sort|uniq|wc|cut|tr|paste|join|comm|column|fold|fmt|nl|rev|tac|seq|shuf|split|csplit|expand|unexpand|numfmt|factor|yes|date|basename|dirname|realpath|readlink|pathchk|ls|stat|du|df|file|md5sum|sha1sum|sha224sum|sha256sum|sha384sum|sha512sum|b2sum|cksum|sum|base64|base32|basenc|od|hexdump|xxd|iconv|diff|cmp|test|\\[|true|false|:|read|cd|pwd|mkdir|rmdir|cp|mv|rm|touch|tee|ln|truncate|install|jq|bc|expr|sleep|printenv|uname|whoami|id|nproc|sed|awk|gawk|mawk|nawk|find|gzip|gunzip|zcat|bzip2|xz|tar)$")
  (#not-match? @SH-REACH-COMMAND "^(eval|source|\\.)$|^(.*/)?(curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|telnet|ftp|socat|nmap|unlink|chmod|chown|chgrp|dd|mkfs(\\..*)?|shred|kill|killall|pkill|nohup|setsid|sudo|su|doas|chroot|nsenter|unshare|mount|umount)$"))
((command name: (command_name) @_w . argument: (_) @_o . argument: (_) @SH-REACH-COMMAND)
  (#match? @_w "^(.*/)?(xargs|env|nice|timeout|stdbuf|builtin|exec|time)$")
  (#match? @_o "^-|=")
  (#not-match? @SH-REACH-COMMAND "^-|=|^[0-9.]+[smhd]?$|^((/usr)?(/local)?/s?bin/)?(echo|printf|cat|head|tail|grep|egrep|fgrep|sort|uniq|wc|cut|tr|paste|join|comm|column|fold|fmt|nl|rev|tac|seq|shuf|split|csplit|expand|unexpand|numfmt|factor|yes|date|basename|dirname|realpath|readlink|pathchk|ls|stat|du|df|file|md5sum|sha1sum|sha224sum|sha256sum|sha384sum|sha512sum|b2sum|cksum|sum|base64|base32|basenc|od|hexdump|xxd|iconv|diff|cmp|test|\\[|true|false|:|read|cd|pwd|mkdir|rmdir|cp|mv|rm|touch|tee|ln|truncate|install|jq|bc|expr|sleep|printenv|uname|whoami|id|nproc|sed|awk|gawk|mawk|nawk|find|gzip|gunzip|zcat|bzip2|xz|tar)$")
  (#not-match? @SH-REACH-COMMAND "^(eval|source|\\.)$|^(.*/)?(curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|telnet|ftp|socat|nmap|unlink|chmod|chown|chgrp|dd|mkfs(\\..*)?|shred|kill|killall|pkill|nohup|setsid|sudo|su|doas|chroot|nsenter|unshare|mount|umount)$"))
; tar runs other programs when told to (--to-command, -I,
; --use-compress-program, --checkpoint-action, -F).
((command name: (command_name) @SH-REACH-PROGRAM argument: (_) @_p)
  (#match? @SH-REACH-PROGRAM "^(.*/)?tar$")
  (#match? @_p "^--(to-command|use-compress-program|checkpoint-action|info-script|new-volume-script|rsh-command)|^-[a-zA-Z]*[IF]"))
; Tools on the list whose program can start processes or write files:
; sed's e command and s///e, w and s///w; awk's system(), | getline and
; print | "cmd"; find -exec, -execdir, -ok and -fprint.
((command name: (command_name) @SH-REACH-PROGRAM argument: (_) @_p)
  (#match? @SH-REACH-PROGRAM "^(.*/)?sed$")
  (#match? @_p "(^|[;{}[:space:]])[0-9$,/!]*[ewW]([[:space:]]|$)|/[gpiImM0-9]*[ewW]([[:space:];}]|$)"))
((command name: (command_name) @SH-REACH-PROGRAM argument: (_) @_p)
  (#match? @SH-REACH-PROGRAM "^(.*/)?(awk|gawk|mawk|nawk)$")
  (#match? @_p "system[[:space:]]*\\(|\\|[[:space:]]*getline|\\|&|print[f]?[^;}]*\\|"))
((command name: (command_name) @SH-REACH-PROGRAM argument: (_) @_p)
  (#match? @SH-REACH-PROGRAM "^(.*/)?find$")
  (#any-of? @_p "-exec" "-execdir" "-ok" "-okdir" "-fprint" "-fprint0" "-fprintf" "-fls"))
; Bash evaluates the value of a variable read in arithmetic ($(( x )),
; (( x )), [[ x -eq 1 ]], ${a[x]}) as an expression, and an expression
; holding a[$(cmd)] runs cmd. A variable the snippet shows to hold only
; numbers (n=5, i=$((i+1)), for i in 1 2 3) has no qualified name here.
((variable_name) @SH-REACH-ARITH
  (#qname-match? @SH-REACH-ARITH "."))
((subscript index: (word) @SH-REACH-ARITH)
  (#qname-match? @SH-REACH-ARITH "."))
((command name: (command_name) @_l argument: (_) @SH-REACH-ARITH)
  (#match? @_l "^let$"))
