# expect: SH-REACH-ARITH verdict=warn
x='a[$(id)]'
echo $((x))
