# expect: PY-OS-PROCESS
# __import__ of a constant name is an import: the import rules judge it,
# and os.system is what is refused.
__import__('os').system('id')
