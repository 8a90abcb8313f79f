#!/usr/bin/python3
"""fake_model.py: a model server for kiln's tests that speaks every wire
format kiln talks, exactly: Ollama's /api/chat (streamed NDJSON, chunked)
and /api/tags; the OpenAI-compatible /v1/chat/completions (server-sent
events, with a usage chunk and [DONE]) and /v1/models; Anthropic's
/v1/messages (server-sent events: message_start ... message_stop, ping,
error) and /v1/models; and Amazon Bedrock's Converse API,
/model/{id}/converse-stream (the AWS event-stream binary framing, CRC32s and
all) and /foundation-models, checking each request's SigV4 signature
against the credentials in FAKE_AWS_KEYS the way AWS does (the path encoded
once more, the credential scope, the signed headers), or a Bedrock API key.
Anthropic and Bedrock streams are written in pieces that split events at
odd places, as a proxy or TCP may.

Every request's method, path and headers (and for SigV4 what the check
found) are kept; GET /_requests returns them and clears the list, so tests
check what kiln sent.

It plays scripted answers chosen by the requested model name, so a test
picks a behaviour through kiln's ordinary configuration (llm.model):

  fake-coder    a normal answer: prose, one ```python block, prose
  fake-slow     the same, one token every 40 ms
  fake-long     a typical 30-line program
  fake-cut      half the answer, then the connection drops
  fake-stall    two tokens, then silence (for kiln's idle timeout)
  fake-500      HTTP 500 with the provider's error body
  fake-429      HTTP 429 with Retry-After: 7
  fake-401      HTTP 401 unless the request carries "Authorization: Bearer sk-good"
  fake-notjson  HTTP 200 whose body is an HTML page
  fake-nocode   an answer in prose only
  fake-repair   wrong code first; once kiln reports the failure, right code
  fake-repair-deny  wrong code first (allowed), then a repair the validator
                refuses (a socket): the repair's own verdict must stop it
  fake-deny     code the validator refuses (opens a network socket)
  fake-overloaded  Anthropic 529 overloaded_error; Bedrock 503 ServiceUnavailableException
  fake-midstream   half the answer, then the provider's error event (Anthropic
                overloaded_error; Bedrock throttlingException); others: fake-coder
  fake-badcrc   Bedrock: the second delta's message CRC is wrong
  fake-badprelude  Bedrock: the second delta's prelude CRC is wrong
  fake-toolarge Anthropic 413 request_too_large; Bedrock 400 ValidationException
  any other     404 "model not found" (the model list names the ones above)

Answers follow the language the system prompt names ("Language: bash").
An answer to an explanation request ("Explain") is one sentence of prose;
an answer that follows earlier turns (a session) begins "Continuing".

Listens only on 127.0.0.1, on the port given (0: one the kernel picks), and
writes the port to --port-file once listening; with --log FILE, appends
each chat request's messages to FILE (a JSON line each), so a test can see
the prompt. With --served-log FILE it appends a line per POST saying which
endpoint served which model with which Authorization header, so a test can
assert what kiln sent where. Standard library only.
"""
import argparse
import binascii
import hashlib
import hmac
import json
import struct
import urllib.parse
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def dumps(obj):
    """Compact JSON, as Ollama and OpenAI write it."""
    return json.JSONEncoder(separators=(",", ":")).encode(obj)


# Monotonic times of the last answer's last token and of its end marker,
# for tests/bench/intent.sh (GET /_last), and the last request's messages. CLOCK_MONOTONIC is shared by the
# processes of one machine, so the bench can compare them with its own.
LAST = {"lastTokenAt": 0.0, "endAt": 0.0}
# Seconds between two tokens (--token-ms); fake-slow has its own 40 ms.
TOKEN_DELAY = 0.0
# --served-log FILE: one JSON line per POST (path, model, Authorization).
SERVED_LOG = None
SERVED_LOCK = threading.Lock()

MODELS = ["fake-coder", "fake-slow", "fake-long", "fake-cut", "fake-stall", "fake-500",
          "fake-429", "fake-401", "fake-notjson", "fake-nocode", "fake-repair", "fake-deny",
          "fake-repair-deny", "fake-overloaded", "fake-midstream", "fake-badcrc", "fake-badprelude", "fake-toolarge"]

# What kiln sent: one entry per request, for GET /_requests.
REQUESTS = []
REQ_LOCK = threading.Lock()

# Bedrock credentials the fake accepts: "ACCESS:SECRET,ACCESS:SECRET".
AWS_KEYS = dict(kv.split(":", 1) for kv in
                os.environ.get("FAKE_AWS_KEYS", "AKIDFAKEKILN:fake/secret+key").split(",") if kv)


def sigv4_check(method, raw_path, headers, body):
    """Verify an AWS4-HMAC-SHA256 Authorization header as AWS does for a
    non-S3 service: the canonical URI is the path as sent, percent-encoded
    once more. Returns (ok, why, details)."""
    auth = headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return False, "MissingAuthenticationTokenException", {}
    try:
        parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
        access, date, region, service, term = parts["Credential"].split("/")
        signed = parts["SignedHeaders"].split(";")
    except (KeyError, ValueError):
        return False, "IncompleteSignatureException", {}
    details = {"access": access, "scope": f"{date}/{region}/{service}/{term}",
               "signedHeaders": signed}
    amz_date = headers.get("x-amz-date", "")
    if service != "bedrock" or term != "aws4_request" or not amz_date.startswith(date):
        return False, "InvalidSignatureException", details
    if access not in AWS_KEYS:
        return False, "UnrecognizedClientException", details
    if "host" not in signed or "x-amz-date" not in signed:
        return False, "InvalidSignatureException", details
    if headers.get("x-amz-security-token") is not None and "x-amz-security-token" not in signed:
        return False, "InvalidSignatureException", details
    path, _, query = raw_path.partition("?")
    canon_uri = urllib.parse.quote(path, safe="/~")
    canon_q = "&".join(sorted(query.split("&"))) if query else ""
    canon_h = "".join(f"{n}:{' '.join((headers.get(n) or '').split())}\n" for n in signed)
    creq = "\n".join([method, canon_uri, canon_q, canon_h, ";".join(signed),
                      hashlib.sha256(body).hexdigest()])
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, details["scope"],
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + AWS_KEYS[access]).encode()
    for m in (date, region, service, term):
        k = hmac.new(k, m.encode(), hashlib.sha256).digest()
    want = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, parts.get("Signature", "")):
        return False, "InvalidSignatureException", details
    return True, "", details


def es_message(headers, payload, bad_prelude=False, bad_crc=False):
    """One AWS event-stream message with string headers."""
    hb = b""
    for name, value in headers.items():
        n, v = name.encode(), value.encode()
        hb += bytes([len(n)]) + n + b"\x07" + struct.pack(">H", len(v)) + v
    total = 12 + len(hb) + len(payload) + 4
    prelude = struct.pack(">II", total, len(hb))
    pcrc = binascii.crc32(prelude) ^ (1 if bad_prelude else 0)
    msg = prelude + struct.pack(">I", pcrc) + hb + payload
    return msg + struct.pack(">I", binascii.crc32(msg) ^ (1 if bad_crc else 0))


def es_event(etype, obj, **bad):
    return es_message({":event-type": etype, ":content-type": "application/json",
                       ":message-type": "event"}, dumps(obj).encode(), **bad)


def es_exception(xtype, message):
    return es_message({":exception-type": xtype, ":content-type": "application/json",
                       ":message-type": "exception"}, dumps({"message": message}).encode())

CODE = {
    "python": "print('hello from kiln')\n",
    "bash": "echo 'hello from kiln'\n",
    "javascript": "console.log('hello from kiln');\n",
}
WRONG = {
    "python": "total = 0\nfor n in range(3):\n    total += n\nprint(totl)\n",
    "bash": "echo start\nexit 3\n",
    "javascript": "console.log(totl);\n",
}
RIGHT = {
    "python": "total = 0\nfor n in range(3):\n    total += n\nprint(total)\n",
    "bash": "echo start\necho fixed\n",
    "javascript": "let total = 3;\nconsole.log(total);\n",
}
DENY = {
    "python": "import socket\ns = socket.create_connection(('example.com', 80))\nprint(s)\n",
    "bash": "curl http://example.com/\n",
    "javascript": "require('net').connect(80, 'example.com');\n",
}


def long_program():
    """A typical 30-line answer: a function, data, a loop, output."""
    lines = ["\"\"\"Summary statistics of a few series.\"\"\"", "import math", "import statistics", "", "",
             "def stats(values):",
             "    \"\"\"Mean and standard deviation of values.\"\"\"",
             "    n = len(values)", "    mean = sum(values) / n",
             "    var = sum((v - mean) ** 2 for v in values) / n",
             "    return mean, math.sqrt(var)", "", ""]
    for i in range(8):
        lines.append(f"data_{i} = [x * {i + 1} for x in range(10)]")
    lines += ["", "results = []"]
    lines += [f"results.append(stats(data_{i}))" for i in range(4)]
    lines += ["for mean, sd in results:", "    print(f'{mean:.2f} {sd:.2f}')",
              "print('median of means', statistics.median(m for m, _ in results))"]
    assert len(lines) == 30, len(lines)
    return "\n".join(lines) + "\n"


def fenced(lang, code, before="Here is the code:", after="It prints the result."):
    return f"{before}\n\n```{lang}\n{code}```\n\n{after}"


# Answers picked by a marker in the intent ("[[answer:NAME]]"), for the
# shapes extraction must survive.
SHAPES = {
    "untagged": "Sure.\n\n```\nprint('untagged')\n```\n",
    "tilde": "~~~python\nprint('tilde')\n~~~\n",
    "multi": ("First the helper:\n\n```python\ndef twice(x):\n    return 2 * x\n```\n\n"
              "Then use it:\n\n```python\nprint(twice(21))\n```\n\nOutput:\n\n```text\n42\n```\n"),
    "truncated": "Here you go:\n\n```python\nfor i in range(2):\n    print(i)\n",
    "think": ("<think>\nThe user wants a greeting. ```python\nprint('draft')\n```\n</think>\n"
              "```python\nprint('after thinking')\n```\n"),
    "bare": "import sys\nprint('bare', file=sys.stdout)\n",
    "foreign": "```bash\necho wrong language\n```\n",
    "sleepy": "```python\nimport time\ntime.sleep(60)\nprint('woke')\n```\n",
    # Cut off mid-line: the code at the last completed line (allowed) is
    # not the final code (denied), so the check kiln ran ahead, at that
    # line, is not its report. The last line is long: with fake-slow it
    # streams for about a second, time for that check to end.
    "taildeny": ("```python\nx = 1\nprint(x)\nimport socket; print('this last line never "
                 "ends, so no check starts for it before the answer does')"),
    # A warn verdict (a loop the validator sees no way out of) that ends.
    "warnloop": ("```python\nimport os\nn = 0\nwhile True:\n    n += 1\n    if n > 3:\n"
                 "        print('looped', flush=True)\n        os._exit(0)\n```\n"),
    # Terminal escapes in the code and the prose: what the terminal front
    # ends must show visibly, never act on (tests/suites/25-cli.sh). The
    # code's second line hides a multiplication behind a comment; the prose
    # erases the verdict line and draws a green "allow"; U+202E reverses.
    "hostile": ("Here is the code:\n\n```python\n# just a comment\n"
                "print(6 * 7)\x1b[1A\r\x1b[2K# nothing here\n"
                "x = 1 # \u202e\u2066 )sdrawkcab(\u2069\n```\n\n"
                "\x1b[1A\r\x1b[2K\x1b[32mverdict: allow\x1b[0m\x1b]52;c;cm0gLXJmIH4=\x07 Safe.\n"),
}


# The README's data story (tests/data/data_story.py): a plot of monthly
# totals read from the workspace's sales.csv, then the first rows of the
# DataFrame that run left in its session.
SHAPES.update({
    "plot": ("Here is the plot:\n\n```python\nimport pandas as pd\nimport matplotlib.pyplot as plt\n\n"
             "df = pd.read_csv('sales.csv', parse_dates=['date'])\n"
             "monthly = df.groupby(df['date'].dt.month)['amount'].sum()\n"
             "print('months', len(monthly))\n"
             "monthly.plot(kind='bar', title='Monthly totals')\nplt.show()\n```\n"),
    "head": "```python\ndf.head()\n```\n",
    # The whole story (tests/data/story_e2e.py): the plot saved into the
    # project, a row appended to sales.csv, and the PNG's hash as the box
    # saw it, to compare with what lands in the folder.
    "story": ("Here is the plot, saved as monthly.png, and April's first sale added:\n\n"
              "```python\nimport hashlib\nimport pandas as pd\nimport matplotlib.pyplot as plt\n\n"
              "df = pd.read_csv('sales.csv', parse_dates=['date'])\n"
              "monthly = df.groupby(df['date'].dt.month)['amount'].sum()\n"
              "print('months', len(monthly))\n"
              "monthly.plot(kind='bar', title='Monthly totals')\n"
              "plt.savefig('monthly.png')\n"
              "with open('sales.csv', 'a') as f:\n"
              "    f.write('2026-04-01,41\\n')\n"
              "with open('monthly.png', 'rb') as f:\n"
              "    print('monthly.png sha256', hashlib.sha256(f.read()).hexdigest())\n```\n"),
})


def big_program(lines=2000):
    """lines lines of plain Python (about 130 KiB: past what intent/run
    checks ahead, so the whole check runs once the answer ends), the last
    one denied (a socket): a verdict of deny says the whole code was
    checked."""
    out = ["import math", "values = []"]
    for i in range(lines - 3):
        out.append(f"values.append(math.sqrt({i}) * {i % 7} + len(str({i})))  # step {i:05d}")
    out.append("import socket; socket.create_connection(('example.com', 80))")
    assert len(out) == lines
    return "\n".join(out) + "\n"


SHAPES["big"] = fenced("python", big_program())

def language_of(messages):
    for m in messages:
        if m.get("role") == "system":
            for line in str(m.get("content", "")).splitlines():
                if line.startswith("Language: "):
                    lang = line[len("Language: "):].strip()
                    return lang if lang in CODE else "python"
    return "python"


def answer_for(model, messages):
    lang = language_of(messages)
    last = ""
    for m in messages:
        if m.get("role") == "user":
            last = str(m.get("content", ""))
    if "[[answer:" in last:
        name = last.split("[[answer:", 1)[1].split("]]", 1)[0]
        return SHAPES.get(name, "no such shape")
    if last.startswith("Explain"):
        return "It added the numbers and printed the total."
    if model == "fake-long":
        return fenced("python", long_program())
    if model == "fake-nocode":
        return "I'm sorry, but I can't write that. Please describe what you need in more detail."
    if model == "fake-repair-deny":
        failed = any("failed" in str(m.get("content", "")) and m.get("role") == "user"
                     for m in messages)
        return fenced(lang, DENY[lang] if failed else WRONG[lang])
    if model == "fake-repair":
        failed = any("failed" in str(m.get("content", "")) and m.get("role") == "user"
                     for m in messages)
        if failed and "time limit" in last:
            # Says what it was told, so a test sees the facts reach it.
            return fenced(lang, "# it ran out of time: no more sleeping\n" + RIGHT[lang],
                          "It was too slow. Fixed:")
        if failed:
            return fenced(lang, RIGHT[lang], "The variable name was misspelled. Fixed:")
        return fenced(lang, WRONG[lang])
    if model == "fake-deny":
        return fenced(lang, DENY[lang])
    if model in ("fake-midstream", "fake-badcrc", "fake-badprelude", "fake-overloaded",
                 "fake-toolarge"):
        model = "fake-coder"
    if any(m.get("role") == "assistant" for m in messages):
        # A session's history reached the model.
        return fenced(lang, CODE[lang], after="Continuing from the previous step, it prints the result.")
    return fenced(lang, CODE[lang])


def tokens(text):
    """Split like a tokenizer would: short pieces, never across UTF-8."""
    out, cur = [], ""
    for ch in text:
        cur += ch
        if len(cur) >= 4 or ch in " \n":
            out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


def now_iso():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-model/1"

    def setup(self):
        super().setup()
        # Each write its own segment, without waiting for an ACK.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def remember(self, body=b"", **extra):
        entry = {"method": self.command, "path": self.path,
                 "headers": {k.lower(): v for k, v in self.headers.items()}}
        entry.update(extra)
        with REQ_LOCK:
            REQUESTS.append(entry)
            del REQUESTS[:-100]

    def log_message(self, fmt, *args):
        if os.environ.get("FAKE_MODEL_VERBOSE"):
            sys.stderr.write("fake-model: " + (fmt % args) + "\n")

    # --- plumbing --------------------------------------------------------
    def send_json(self, status, obj, headers=None):
        body = dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def start_chunked(self, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunked(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def drop(self):
        """Cut the connection mid-body, as a crashed server would."""
        self.wfile.flush()
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        self.raw_body = raw
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return None

    def pieces(self, data):
        """Write data in pieces that split events and lines at odd places."""
        sizes = [1, 7, 3, 29, 2, 113, 5, 64]
        i = off = 0
        while off < len(data):
            n = sizes[i % len(sizes)]
            self.chunk(data[off:off + n])
            off += n
            i += 1

    # --- routes ------------------------------------------------------------
    def do_GET(self):
        if self.path != "/_requests":
            self.remember()
        if self.path == "/_requests":
            with REQ_LOCK:
                out = list(REQUESTS)
                REQUESTS.clear()
            self.send_json(200, out)
        elif self.path.startswith("/foundation-models"):
            ok, why, details = sigv4_check("GET", self.path, self.headers, b"")
            bearer = self.headers.get("Authorization", "").startswith("Bearer ")
            if not ok and not bearer:
                self.send_bedrock_error(403, why, "The request signature we calculated does not "
                                        "match the signature you provided.")
                return
            self.send_json(200, {"modelSummaries": [
                {"modelId": m, "modelName": m, "providerName": "kiln-tests",
                 "inputModalities": ["TEXT"], "outputModalities": ["TEXT"],
                 "responseStreamingSupported": True} for m in MODELS]})
        elif self.path.startswith("/v1/models") and self.headers.get("anthropic-version"):
            self.send_json(200, {"data": [
                {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                for m in MODELS], "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]})
        elif self.path == "/api/tags":
            self.send_json(200, {"models": [
                {"name": m + ":latest", "model": m + ":latest", "modified_at": "2024-06-01T00:00:00Z",
                 "size": 1000, "digest": "0" * 64,
                 "details": {"format": "gguf", "family": "fake", "parameter_size": "1B",
                             "quantization_level": "Q4_0"}} for m in MODELS]})
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 1700000000, "owned_by": "kiln-tests"}
                for m in MODELS]})
        elif self.path == "/_last":
            self.send_json(200, LAST)
        elif self.path == "/":
            body = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_json(404, {"error": "404 page not found"})

    def do_POST(self):
        req = self.read_body()
        if SERVED_LOG:
            # Which endpoint served which model with which key: the
            # provider tests assert it (tests/suites/50-intent.sh).
            with SERVED_LOCK, open(SERVED_LOG, "a") as f:
                model = str(req.get("model", "")) if isinstance(req, dict) else ""
                if self.path.startswith("/model/"):  # Bedrock: the id is in the path
                    model = urllib.parse.unquote(self.path.split("/")[2])
                f.write(dumps({"path": self.path, "model": model,
                               "authorization": self.headers.get("Authorization"),
                               "apiKey": self.headers.get("x-api-key")}) + "\n")
        if self.path == "/v1/messages":
            self.remember()
            self.anthropic(req)
            return
        if self.path.startswith("/model/"):
            self.bedrock(req)
            return
        self.remember()
        openai = self.path == "/v1/chat/completions"
        if self.path not in ("/api/chat", "/v1/chat/completions"):
            self.send_json(404, {"error": "404 page not found"})
            return
        if not isinstance(req, dict):
            self.error(openai, 400, "invalid JSON in request body")
            return
        model = str(req.get("model", ""))
        base = model.split(":")[0]
        messages = req.get("messages") or []
        if getattr(self, "log_path", None):
            with open(self.log_path, "a") as f:
                f.write(json.dumps(messages) + "\n")
        # The last prompt, for tests that check what kiln told the model.
        LAST["messages"] = messages
        if base not in MODELS:
            if openai:
                self.send_json(404, {"error": {
                    "message": f"The model `{model}` does not exist or you do not have access to it.",
                    "type": "invalid_request_error", "param": None, "code": "model_not_found"}})
            else:
                self.send_json(404, {"error": f"model \"{model}\" not found, try pulling it first"})
            return
        if base == "fake-500":
            if openai:
                self.send_json(500, {"error": {"message": "The server had an error while processing your request.",
                                               "type": "server_error", "param": None, "code": None}})
            else:
                self.send_json(500, {"error": "llama runner process has terminated: signal: killed"})
            return
        if base == "fake-429":
            if openai:
                self.send_json(429, {"error": {"message": "Rate limit reached for requests",
                                               "type": "requests", "param": None,
                                               "code": "rate_limit_exceeded"}},
                               {"Retry-After": "7", "retry-after-ms": "7000"})
            else:
                self.send_json(429, {"error": "too many requests"}, {"Retry-After": "7"})
            return
        if base == "fake-401" and self.headers.get("Authorization") != "Bearer sk-good":
            if openai:
                self.send_json(401, {"error": {"message": "Incorrect API key provided.",
                                               "type": "invalid_request_error", "param": None,
                                               "code": "invalid_api_key"}})
            else:
                self.send_json(401, {"error": "unauthorized"})
            return
        if base == "fake-notjson":
            body = b"<html><body><h1>502 Bad Gateway</h1></body></html>\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        text = answer_for(base, messages)
        toks = tokens(text)
        delay = 0.04 if base == "fake-slow" else TOKEN_DELAY
        cut = len(toks) // 2 if base == "fake-cut" else None
        stall = 2 if base == "fake-stall" else None
        prompt_tokens = sum(len(str(m.get("content", ""))) // 4 for m in messages)
        if openai:
            self.stream_openai(model, req, toks, delay, cut, stall, prompt_tokens)
        else:
            self.stream_ollama(model, toks, delay, cut, stall, prompt_tokens)

    def error(self, openai, status, msg):
        if openai:
            self.send_json(status, {"error": {"message": msg, "type": "invalid_request_error",
                                              "param": None, "code": None}})
        else:
            self.send_json(status, {"error": msg})

    def play(self, toks, delay, cut, stall, emit):
        for i, t in enumerate(toks):
            if cut is not None and i == cut:
                self.drop()
                return False
            if stall is not None and i == stall:
                time.sleep(30)
                self.drop()
                return False
            emit(t)
            if delay:
                time.sleep(delay)
        LAST["lastTokenAt"] = time.monotonic()
        return True

    def stream_ollama(self, model, toks, delay, cut, stall, prompt_tokens):
        self.start_chunked("application/x-ndjson")

        def emit(t):
            self.chunk(dumps({"model": model, "created_at": now_iso(),
                                   "message": {"role": "assistant", "content": t},
                                   "done": False}) + "\n")
        if not self.play(toks, delay, cut, stall, emit):
            return
        self.chunk(dumps({
            "model": model, "created_at": now_iso(),
            "message": {"role": "assistant", "content": ""},
            "done_reason": "stop", "done": True,
            "total_duration": 5043500667, "load_duration": 5025959,
            "prompt_eval_count": prompt_tokens, "prompt_eval_duration": 325953000,
            "eval_count": len(toks), "eval_duration": 4709213000}) + "\n")
        self.end_chunked()
        LAST["endAt"] = time.monotonic()

    def stream_openai(self, model, req, toks, delay, cut, stall, prompt_tokens):
        self.start_chunked("text/event-stream; charset=utf-8")
        created = int(time.time())
        cid = "chatcmpl-fake%d" % created

        def event(obj):
            self.chunk("data: " + dumps(obj) + "\n\n")

        def chunk_obj(delta, finish):
            return {"id": cid, "object": "chat.completion.chunk", "created": created,
                    "model": model, "system_fingerprint": "fp_fake",
                    "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                 "finish_reason": finish}]}
        event(chunk_obj({"role": "assistant", "content": ""}, None))
        if not self.play(toks, delay, cut, stall,
                         lambda t: event(chunk_obj({"content": t}, None))):
            return
        event(chunk_obj({}, "stop"))
        if (req.get("stream_options") or {}).get("include_usage"):
            event({"id": cid, "object": "chat.completion.chunk", "created": created,
                   "model": model, "system_fingerprint": "fp_fake", "choices": [],
                   "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(toks),
                             "total_tokens": prompt_tokens + len(toks)}})
        self.chunk("data: [DONE]\n\n")
        self.end_chunked()
        LAST["endAt"] = time.monotonic()


    # --- Anthropic's Messages API ----------------------------------------
    def anthropic_error(self, status, etype, message, headers=None):
        self.send_json(status, {"type": "error", "error": {"type": etype, "message": message}},
                       headers)

    def anthropic(self, req):
        if self.headers.get("anthropic-version") != "2023-06-01":
            self.anthropic_error(400, "invalid_request_error",
                                 "anthropic-version: header is required")
            return
        if not isinstance(req, dict):
            self.anthropic_error(400, "invalid_request_error", "invalid JSON in request body")
            return
        model = str(req.get("model", ""))
        messages = req.get("messages") or []
        if not isinstance(req.get("max_tokens"), int):
            self.anthropic_error(400, "invalid_request_error", "max_tokens: Field required")
            return
        roles = [m.get("role") for m in messages]
        if any(r not in ("user", "assistant") for r in roles) or not roles or roles[0] != "user":
            self.anthropic_error(400, "invalid_request_error",
                                 f"messages: roles must be user/assistant, starting with user: {roles}")
            return
        if not self.headers.get("x-api-key"):
            self.anthropic_error(401, "authentication_error", "x-api-key header is required")
            return
        if model not in MODELS:
            self.anthropic_error(404, "not_found_error", f"model: {model}")
            return
        if model == "fake-401" and self.headers.get("x-api-key") != "sk-good":
            self.anthropic_error(401, "authentication_error", "invalid x-api-key")
            return
        if model == "fake-429":
            self.anthropic_error(429, "rate_limit_error",
                                 "Number of request tokens has exceeded your per-minute rate limit",
                                 {"retry-after": "7"})
            return
        if model == "fake-500":
            self.anthropic_error(500, "api_error", "Internal server error")
            return
        if model == "fake-overloaded":
            self.anthropic_error(529, "overloaded_error", "Overloaded")
            return
        if model == "fake-toolarge":
            self.anthropic_error(413, "request_too_large", "Request exceeds the maximum allowed size")
            return
        if model == "fake-notjson":
            self.send_html()
            return
        # The system prompt travels apart: give it back to the script.
        msgs = [{"role": "system", "content": req.get("system", "")}] + [
            {"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
             else "".join(b.get("text", "") for b in m["content"])} for m in messages]
        toks = tokens(answer_for(model, msgs))
        delay = 0.04 if model == "fake-slow" else TOKEN_DELAY
        self.start_chunked("text/event-stream; charset=utf-8")

        def event(name, obj):
            return ("event: %s\ndata: %s\n\n" % (name, dumps(obj))).encode()
        prompt_tokens = sum(len(str(m.get("content", ""))) // 4 for m in msgs)
        head = event("message_start", {"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": 1}}})
        head += event("content_block_start", {"type": "content_block_start", "index": 0,
                                              "content_block": {"type": "text", "text": ""}})
        head += event("ping", {"type": "ping"})
        self.pieces(head)
        for i, t in enumerate(toks):
            if model == "fake-cut" and i == len(toks) // 2:
                self.drop()
                return
            if model == "fake-stall" and i == 2:
                time.sleep(30)
                self.drop()
                return
            if model == "fake-midstream" and i == len(toks) // 2:
                self.pieces(event("error", {"type": "error", "error": {
                    "type": "overloaded_error", "message": "Overloaded"}}))
                self.end_chunked()
                return
            self.pieces(event("content_block_delta", {
                "type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": t}}))
            if delay:
                time.sleep(delay)
        LAST["lastTokenAt"] = time.monotonic()
        tail = event("content_block_stop", {"type": "content_block_stop", "index": 0})
        tail += event("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                        "usage": {"output_tokens": len(toks)}})
        tail += event("message_stop", {"type": "message_stop"})
        self.pieces(tail)
        self.end_chunked()
        LAST["endAt"] = time.monotonic()

    # --- Amazon Bedrock's Converse API ---------------------------------
    def send_bedrock_error(self, status, etype, message, headers=None):
        h = {"x-amzn-ErrorType": etype + ":http://internal.amazon.com/coral/com.amazon.bedrock/",
             "x-amzn-RequestId": "00000000-0000-0000-0000-000000000000"}
        h.update(headers or {})
        self.send_json(status, {"message": message}, h)

    def send_html(self):
        body = b"<html><body><h1>502 Bad Gateway</h1></body></html>\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def bedrock(self, req):
        raw_path = self.path
        auth = self.headers.get("Authorization", "")
        bearer = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        if bearer is None:
            ok, why, details = sigv4_check("POST", raw_path, self.headers, self.raw_body)
        else:
            ok, why, details = True, "", {}
        self.remember(sigv4={"ok": ok, "error": why, **details} if bearer is None else None)
        parts = raw_path.split("?")[0].split("/")
        if len(parts) != 4 or parts[3] not in ("converse-stream", "converse"):
            self.send_bedrock_error(404, "UnknownOperationException", "Unknown operation")
            return
        if not ok:
            self.send_bedrock_error(403, why, "The request signature we calculated does not match "
                                    "the signature you provided. Check your AWS Secret Access Key "
                                    "and signing method.")
            return
        model = urllib.parse.unquote(parts[2])
        if not isinstance(req, dict) or not isinstance(req.get("messages"), list):
            self.send_bedrock_error(400, "ValidationException", "Malformed input request")
            return
        messages = req["messages"]
        roles = [m.get("role") for m in messages]
        if not roles or roles[0] != "user" or any(a == b for a, b in zip(roles, roles[1:])):
            self.send_bedrock_error(400, "ValidationException",
                                    "A conversation must start with a user message and "
                                    "alternate user and assistant roles.")
            return
        base = model.split(":")[0]
        if base not in MODELS:
            self.send_bedrock_error(400, "ValidationException",
                                    "The provided model identifier is invalid.")
            return
        if base == "fake-401" and bearer != "sk-good":
            self.send_bedrock_error(401, "UnrecognizedClientException",
                                    "The security token included in the request is invalid.")
            return
        if base == "fake-429":
            self.send_bedrock_error(429, "ThrottlingException",
                                    "Too many requests, please wait before trying again.",
                                    {"Retry-After": "7"})
            return
        if base == "fake-500":
            self.send_bedrock_error(500, "InternalServerException", "Internal server error")
            return
        if base == "fake-overloaded":
            self.send_bedrock_error(503, "ServiceUnavailableException",
                                    "Bedrock is unable to process your request.")
            return
        if base == "fake-toolarge":
            self.send_bedrock_error(400, "ValidationException",
                                    "Input is too long for requested model.")
            return
        if base == "fake-notjson":
            self.send_html()
            return
        system = "".join(b.get("text", "") for b in req.get("system") or [])
        msgs = [{"role": "system", "content": system}] + [
            {"role": m["role"], "content": "".join(b.get("text", "") for b in m["content"])}
            for m in messages]
        toks = tokens(answer_for(base, msgs))
        delay = 0.04 if base == "fake-slow" else TOKEN_DELAY
        self.start_chunked("application/vnd.amazon.eventstream")
        self.pieces(es_event("messageStart", {"p": "abcd", "role": "assistant"}))
        for i, t in enumerate(toks):
            if base == "fake-cut" and i == len(toks) // 2:
                # Half a message, then the connection drops.
                self.pieces(es_event("contentBlockDelta", {"contentBlockIndex": 0,
                                                           "delta": {"text": t}})[:9])
                self.drop()
                return
            if base == "fake-stall" and i == 2:
                time.sleep(30)
                self.drop()
                return
            if base == "fake-midstream" and i == len(toks) // 2:
                self.pieces(es_exception("throttlingException",
                                         "Too many tokens, please wait before trying again."))
                self.end_chunked()
                return
            bad = {}
            if i == 1 and base == "fake-badcrc":
                bad = {"bad_crc": True}
            if i == 1 and base == "fake-badprelude":
                bad = {"bad_prelude": True}
            self.pieces(es_event("contentBlockDelta", {"contentBlockIndex": 0, "p": "xy",
                                                       "delta": {"text": t}}, **bad))
            if delay:
                time.sleep(delay)
        LAST["lastTokenAt"] = time.monotonic()
        prompt_tokens = sum(len(str(m.get("content", ""))) // 4 for m in msgs)
        tail = es_event("contentBlockStop", {"contentBlockIndex": 0})
        tail += es_event("messageStop", {"stopReason": "end_turn"})
        tail += es_event("metadata", {"usage": {"inputTokens": prompt_tokens,
                                                "outputTokens": len(toks),
                                                "totalTokens": prompt_tokens + len(toks)},
                                      "metrics": {"latencyMs": 12}})
        self.pieces(tail)
        self.end_chunked()
        LAST["endAt"] = time.monotonic()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log", help="append each chat request's messages to this file, a JSON line each")
    ap.add_argument("--max-seconds", type=float, default=1800,
                    help="exit after this long, so a forgotten server never lingers")
    ap.add_argument("--token-ms", type=float, default=0,
                    help="pace every answer at one token per this many ms (default: all at "
                    "once), as a real model streams: the intent bench's clock starts at the "
                    "last token, and a burst would leave kiln reading a backlog then")
    ap.add_argument("--served-log", help="append one JSON line per POST served: its path, "
                    "model and Authorization header")
    args = ap.parse_args()
    global TOKEN_DELAY
    TOKEN_DELAY = args.token_ms / 1000.0
    Handler.log_path = args.log
    global SERVED_LOG
    SERVED_LOG = args.served_log
    srv = Server(("127.0.0.1", args.port), Handler)
    port = srv.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.rename(tmp, args.port_file)
    else:
        print(port, flush=True)
    threading.Timer(args.max_seconds, lambda: os._exit(0)).start()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
