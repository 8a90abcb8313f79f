# expect: SH-DYNAMIC-COMMAND
alias ls="rm -rf"
ls
