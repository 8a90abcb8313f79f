if [ -f data.csv ] && [[ -s data.csv ]]; then
  test -r data.csv && wc -l data.csv
fi
