from typing import NamedTuple

class Run(NamedTuple):
    athlete: str
    seconds: float

runs = [Run("kim", 612.5), Run("lee", 598.1), Run("ola", 640.0)]
for rank, run in enumerate(sorted(runs, key=lambda r: r.seconds), start=1):
    minutes, seconds = divmod(run.seconds, 60)
    print(f"{rank}. {run.athlete} {int(minutes)}:{seconds:04.1f}")
