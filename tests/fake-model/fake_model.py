#!/usr/bin/python3
"""fake_model.py: a model server for kiln's tests that speaks both wire
formats kiln talks, exactly: Ollama's /api/chat (streamed NDJSON, chunked)
and /api/tags, and the OpenAI-compatible /v1/chat/completions (server-sent
events, with a usage chunk and [DONE]) and /v1/models.

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
  fake-deny     code the validator refuses (opens a network socket)
  any other     404 "model not found" (the model list names the ones above)

Answers follow the language the system prompt names ("Language: bash").
An answer to an explanation request ("Explain") is one sentence of prose;
an answer that follows earlier turns (a session) begins "Continuing".

Listens only on 127.0.0.1, on the port given (0: one the kernel picks), and
writes the port to --port-file once listening. Standard library only.
"""
import argparse
import json
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

MODELS = ["fake-coder", "fake-slow", "fake-long", "fake-cut", "fake-stall", "fake-500",
          "fake-429", "fake-401", "fake-notjson", "fake-nocode", "fake-repair", "fake-deny"]

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
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return None

    # --- routes ------------------------------------------------------------
    def do_GET(self):
        if self.path == "/api/tags":
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
        delay = 0.04 if base == "fake-slow" else 0.0
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


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--max-seconds", type=float, default=1800,
                    help="exit after this long, so a forgotten server never lingers")
    args = ap.parse_args()
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
