find . -name '*.log' -size +1M -print | while read -r f; do
  echo "$(du -h "$f" | cut -f1) $f"
done
