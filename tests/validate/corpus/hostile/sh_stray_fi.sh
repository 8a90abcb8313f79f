# expect: syntax
echo a
fi
