# expect: PY-REACH-COMPUTED verdict=warn
name = input()
globals()[name]()
