import textwrap

paragraph = ("kiln validates code before it runs and shows what it found as diagnostics "
             "on exact ranges, so the person can decide.")
print(textwrap.fill(paragraph, width=40))
print(textwrap.indent(textwrap.dedent("""
    a: 1
    b: 2
"""), "> "))
