from datetime import datetime, timezone

stamps = ["2024-05-01T10:15:00+02:00", "2024-05-01T08:20:00Z", "2024-04-30T23:59:59-05:00"]
parsed = [datetime.fromisoformat(s.replace("Z", "+00:00")) for s in stamps]
for dt in sorted(parsed):
    print(dt.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"))
