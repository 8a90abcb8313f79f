#!/bin/sh
# record-session.sh KILN URL TMPDIR: drive a `kiln --record` server through
# an intent, its approval and a repair against the fake model server, then
# replay the transcript it wrote against a fresh server. Exits non-zero
# when either step fails. Used by tests/suites/50-intent.sh.
set -eu
kiln=$1
url=$2
tmp=$3
rec="$tmp/recorded.test"
rm -f "$rec"
cat >"$tmp/drive.test" <<EOT
# Drives a recording server: what it writes must replay by itself.
%args --record $rec
%env KILN_LLM_PROVIDER=ollama
%env KILN_LLM_URL=$url
%env XDG_STATE_HOME=$tmp/state
%timeout 30000
%ignore intent/partial
%ignore run/output
%ignore intent/attempt
--> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"initializationOptions":{"llm":{"model":"fake-repair","apiKey":"sk-secret-never-recorded"}}}}
<-- {"jsonrpc":"2.0","id":1,"result":{"capabilities":{}}}
--> {"jsonrpc":"2.0","method":"initialized","params":{}}
--> {"jsonrpc":"2.0","id":2,"method":"intent/run","params":{"intent":"add up 0, 1 and 2","language":"python","sessionId":"rec"}}
<-- {"jsonrpc":"2.0","id":2,"result":{"proposalId":"{{\$p}}","verdict":"allow"}}
--> {"jsonrpc":"2.0","id":3,"method":"intent/approve","params":{"proposalId":"{{\$p}}","repair":{"maxAttempts":2,"auto":true}}}
<-- {"jsonrpc":"2.0","id":3,"result":{"ok":true}}
--> {"jsonrpc":"2.0","id":4,"method":"shutdown"}
<-- {"jsonrpc":"2.0","id":4,"result":null}
--> {"jsonrpc":"2.0","method":"exit"}
%exit 0
EOT
echo "== recording"
"$kiln" replay --server "$kiln" "$tmp/drive.test"
if grep -q "sk-secret" "$rec"; then
	echo "the API key reached the recording" >&2
	exit 1
fi
grep -q '{{redacted}}' "$rec"
# The recording knows messages, not the environment: say where the model is.
{
	echo "%env KILN_LLM_PROVIDER=ollama"
	echo "%env KILN_LLM_URL=$url"
	echo "%env XDG_STATE_HOME=$tmp/state"
	echo "%timeout 30000"
	cat "$rec"
} >"$tmp/replay.test"
echo "== replaying the recording"
"$kiln" replay --server "$kiln" "$tmp/replay.test"
