# expect: PY-REACH-NATIVE verdict=warn
import sqlite3
con = sqlite3.connect("data.db")
con.enable_load_extension(True)
con.load_extension("./ext")
