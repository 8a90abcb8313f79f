# expect: syntax
echo a
echo b
done
