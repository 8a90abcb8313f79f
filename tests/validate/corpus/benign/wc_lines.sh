#!/bin/bash
for f in data/*.csv; do
  printf '%s %s\n' "$(wc -l < "$f")" "$f"
done | sort -rn | head -5
