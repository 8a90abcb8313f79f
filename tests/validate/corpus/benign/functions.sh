count_words() {
  wc -w < "$1"
}
for f in chapters/*.md; do
  echo "$f: $(count_words "$f")"
done
