# expect: PY-SOURCE-ENCODING
# vim: set fileencoding=shift_jis :
# In Shift JIS a byte shown as a backslash can belong to a character.
print(1)
