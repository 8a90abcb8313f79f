# expect: PY-SOURCE-ENCODING
# vim: set fileencoding=unicode_escape :
# note \x0aprint("hidden")
print(1)
