#!/bin/sh
i=0
while [ "$i" -lt 10 ]; do
  echo "step $i"
  i=$((i + 1))
done
