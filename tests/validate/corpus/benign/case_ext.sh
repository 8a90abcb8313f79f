for f in *; do
  case "$f" in
    *.csv) echo "table: $f" ;;
    *.txt) echo "text: $f" ;;
    *) echo "other: $f" ;;
  esac
done
