# expect: SH-REACH-ARITH verdict=warn
x='a[$(id)]'
arr=(1 2)
echo "${arr[$x]}"
