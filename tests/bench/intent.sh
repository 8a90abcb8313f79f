#!/bin/sh
# intent.sh: what kiln itself adds to the run-intent path, for a typical
# 30-line answer (the fake model server's "fake-long"), against each
# provider's wire format:
#   - from the model's last token (and from its end-of-stream marker) to the
#     proposal reaching the client: reading the stream, extraction,
#     validation, edit building, framing;
#   - from sending intent/approve to the first output byte reaching the
#     client, next to the same program's first output byte run by a bare
#     python3 outside any sandbox (the interpreter's own start-up).
# The fake server and this driver read the same CLOCK_MONOTONIC. The fake
# server streams one token a millisecond (--token-ms 1, faster than any
# real model): sent all at once, the answer's few hundred tokens would
# still be in kiln's socket at the "last token", and the figure would time
# the reading of a backlog no real model makes. Loopback only;
# BENCH_INTENT_COUNT (default 30) rounds per provider; medians and 90th
# percentiles; nothing is asserted.
set -eu
cd "$(dirname "$0")/../.."
KILN=${KILN:-build/kiln} # KILN=path times another binary
[ -x "$KILN" ] || make build/kiln >/dev/null
count=${BENCH_INTENT_COUNT:-30}
tmp=$(mktemp -d)
/usr/bin/python3 tests/fake-model/fake_model.py --port-file "$tmp/port" --max-seconds 600 --token-ms 1 \
	2>/dev/null &
fake=$!
trap 'kill $fake 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
url="http://127.0.0.1:$(cat "$tmp/port")"

XDG_STATE_HOME="$tmp/state" /usr/bin/python3 - "$url" "$count" "$KILN" <<'PY'
import json, os, statistics, subprocess, sys, time, urllib.request
sys.path.insert(0, "tests/bench")
import figures  # the ratios for run.sh's baseline (KILN_BENCH_FIGURES)

url, count, kiln = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def frame(obj):
    b = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(b) + b


class Kiln:
    def __init__(self, provider):
        env = dict(os.environ, KILN_LLM_PROVIDER=provider, KILN_LLM_URL=url,
                   KILN_MODEL="fake-long")
        self.p = subprocess.Popen([kiln], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env)
        self.buf = b""
        self.id = 0
        self.call("initialize", {"capabilities": {}})

    def send(self, method, params):
        self.id += 1
        self.p.stdin.write(frame({"jsonrpc": "2.0", "id": self.id, "method": method,
                                  "params": params}))
        self.p.stdin.flush()
        return self.id

    def read(self):
        while True:
            if b"\r\n\r\n" in self.buf:
                head, rest = self.buf.split(b"\r\n\r\n", 1)
                n = int(head.split(b":")[1])
                if len(rest) >= n:
                    self.buf = rest[n:]
                    return json.loads(rest[:n]), time.monotonic()
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                raise SystemExit("kiln exited")
            self.buf += chunk

    def call(self, method, params, until=None):
        rid = self.send(method, params)
        first = None
        while True:
            msg, t = self.read()
            if until and msg.get("method") == until and first is None:
                first = t
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise SystemExit(f"{method}: {msg['error']}")
                return msg["result"], t, first

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def last():
    with urllib.request.urlopen(url + "/_last") as r:
        return json.load(r)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def show(label, xs):
    print(f"  {label}: median {statistics.median(xs) * 1000:.2f} ms, "
          f"p90 {pct(xs, 0.9) * 1000:.2f} ms")


code = None
approve = {}
for provider in ("ollama", "openai"):
    k = Kiln(provider)
    from_token, from_end, to_first = [], [], []
    for i in range(count):
        res, t_prop, _ = k.call("intent/run", {"intent": "stats", "language": "python"})
        code = res["code"]
        m = last()
        from_token.append(t_prop - m["lastTokenAt"])
        from_end.append(t_prop - m["endAt"])
        t0 = time.monotonic()
        _, _, first = k.call("intent/approve", {"proposalId": res["proposalId"]}, "run/output")
        to_first.append(first - t0)
    k.close()
    print(f"{provider} ({len(code.splitlines())}-line answer, {count} rounds):")
    show("last token -> proposal at the client", from_token)
    print(f"    {statistics.median(from_token) * 1000:.2f}x the target of 1 ms")
    figures.add(f"intent.last_token.{provider}", statistics.median(from_token) * 1000,
                "lower-is-better", f"{statistics.median(from_token) * 1000:.2f} ms", "the target, 1 ms")
    show("end of stream -> proposal at the client", from_end)
    show("intent/approve -> first output byte", to_first)
    approve[provider] = statistics.median(to_first)

bare = []
path = os.path.join(os.environ.get("XDG_STATE_HOME", "/tmp"), "snippet.py")
with open(path, "w") as f:
    f.write(code)
for i in range(count):
    t0 = time.monotonic()
    p = subprocess.Popen(["/usr/bin/python3", path], stdout=subprocess.PIPE)
    p.stdout.read(1)
    bare.append(time.monotonic() - t0)
    p.stdout.read()
    p.wait()
print("reference, no kiln:")
show("bare python3 start -> first output byte", bare)
for provider, t in approve.items():
    print(f"{provider}: intent/approve -> first output byte is "
          f"{t / statistics.median(bare):.2f}x bare python3's first byte")
    figures.add(f"intent.approve.{provider}", t / statistics.median(bare), "lower-is-better",
                f"{t * 1000:.2f} ms", f"bare `python3` to its first byte, {statistics.median(bare) * 1000:.1f} ms")
PY
