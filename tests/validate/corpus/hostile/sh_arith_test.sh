# expect: SH-REACH-ARITH verdict=warn
read -r x
[[ $x -eq 1 ]] && echo one
