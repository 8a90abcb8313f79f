import sqlite3

con = sqlite3.connect("local.db")
con.execute("create table if not exists visits(day text, n integer)")
con.executemany("insert into visits values (?, ?)", [("mon", 3), ("tue", 5), ("wed", 2)])
for day, n in con.execute("select day, n from visits order by n desc"):
    print(day, n)
con.commit()
con.close()
