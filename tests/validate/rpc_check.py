#!/usr/bin/env python3
"""rpc_check.py: drive `kiln` over stdio (LSP framing) and check the
snippet/validate method: ranges in the negotiated encoding, the verdict,
the LSP shape of diagnostics, and the errors for bad params. Prints one
line per check and "rpc: N passed, N failed"."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kilnrpc  # noqa: E402

kiln = sys.argv[1]
passed = failed = 0


def ok(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}")


class Server(kilnrpc.Server):
    def __init__(self, encoding):
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(os.path.dirname(__file__), "no-config"))
        super().__init__(kiln, env, {"general": {"positionEncodings": [encoding]}})


# 'é😀' before eval: UTF-16 counts 1 + 2, UTF-8 2 + 4, UTF-32 1 + 1.
code = "s = 'é😀'; eval(s)\n"
want = {"utf-16": 11, "utf-8": 14, "utf-32": 10}
for enc, col in want.items():
    srv = Server(enc)
    got_enc = srv.init.get("result", {}).get("capabilities", {}).get("positionEncoding")
    ok(got_enc == enc, f"{enc}: negotiated")
    r = srv.call("snippet/validate", {"language": "python", "code": code})
    res = r.get("result") or {}
    diags = [d for d in res.get("diagnostics", []) if d.get("code") == "PY-DYNAMIC-CODE"]
    ok(res.get("verdict") == "deny", f"{enc}: eval denies")
    ok(len(diags) == 1 and diags[0]["range"]["start"] == {"line": 0, "character": col}
       and diags[0]["range"]["end"] == {"line": 0, "character": col + 4},
       f"{enc}: eval at column {col}")
    if enc == "utf-16":
        d = diags[0] if diags else {}
        ok(d.get("source") == "kiln" and d.get("codeDescription", {}).get("href") == "kiln:rules/PY-DYNAMIC-CODE" and d.get("severity") == 1 and "explanation" in d.get("data", {})
           and "href" in d.get("codeDescription", {}), "diagnostic has LSP's shape")
        r = srv.call("snippet/validate", {"language": "sh", "code": "sort data.txt | uniq -c\n"})
        ok(r.get("result") == {"diagnostics": [], "verdict": "allow"}, "benign bash allows")
        r = srv.call("snippet/validate", {"language": "js", "code": "while (true) { x++ }\n",
                                          "profile": "relaxed"})
        ok((r.get("result") or {}).get("verdict") == "warn", "profile per request")
        r = srv.call("snippet/validate", {"language": "python", "code": "if x\n"})
        res = r.get("result") or {}
        ok(res.get("verdict") == "deny" and res["diagnostics"][0].get("code") == "syntax",
           "syntax error denies")
        r = srv.call("snippet/validate", {"language": "cobol", "code": "x"})
        ok(r.get("error", {}).get("code") == -32602 and "cobol" in r["error"]["message"],
           "unknown language is invalid params")
        r = srv.call("snippet/validate", {"language": "python", "code": "x", "profile": "lax"})
        ok(r.get("error", {}).get("code") == -32602, "unknown profile is invalid params")
        r = srv.call("snippet/validate", {"language": "python"})
        ok(r.get("error", {}).get("code") == -32602, "missing code is invalid params")
    ok(srv.close() == 0, f"{enc}: clean exit")

print(f"rpc: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
