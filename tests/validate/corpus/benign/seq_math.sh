seq 1 10 | paste -sd+ | bc
seq 1 5 | awk '{ s += $1 * $1 } END { print "sum of squares", s }'
