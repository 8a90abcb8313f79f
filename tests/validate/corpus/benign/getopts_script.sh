verbose=0
while getopts "v" opt; do
  case $opt in
    v) verbose=1 ;;
  esac
done
[ "$verbose" = 1 ] && echo "verbose mode"
echo done
