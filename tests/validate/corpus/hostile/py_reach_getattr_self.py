# expect: PY-REACH-COMPUTED verdict=warn
# getattr with a computed name reaches everything the object holds (issue 35):
# a warning, whatever the object.
class Config:
    def __init__(self, **values):
        self.values = values

    def get(self, name, default=None):
        return getattr(self, name, self.values.get(name, default))

c = Config(alpha=1, beta=2)
print(c.get("alpha"), c.get("gamma", 0), type(c).__name__)
