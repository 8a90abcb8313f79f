import pandas as pd

df = pd.read_excel("survey.xlsx", sheet_name="answers")
pivot = df.pivot_table(index="department", columns="question", values="score", aggfunc="mean")
pivot = pivot.round(2)
pivot.to_excel("survey_pivot.xlsx")
print(pivot.describe())
