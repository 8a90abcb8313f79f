sed -e 's/colour/color/g' -e 's/  */ /g' draft.txt > cleaned.txt
diff -u draft.txt cleaned.txt | head -20
