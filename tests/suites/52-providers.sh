#!/bin/sh
# 52-providers.sh: what kiln sends to Anthropic's Messages API and to
# Amazon Bedrock, checked on the wire. The fake model server
# (tests/fake-model/fake_model.py) records every request's headers and
# verifies Bedrock's SigV4 signatures the way AWS does; kiln ask drives
# kiln. Checked: Anthropic's x-api-key and anthropic-version on the chat
# and on the model list; Bedrock's AWS4-HMAC-SHA256 Authorization for the
# right credential scope, x-amz-date, x-amz-security-token (signed) with a
# session token and absent without, a model id with ':' (the path is
# signed encoded once more than it is sent), credentials and region from
# ~/.aws files with AWS_PROFILE, a Bedrock API key as a bearer token, a
# wrong secret, no region, no credentials; and that no secret reaches the
# server's debug log or the sandbox. Loopback only.
set -u
cd "$(dirname "$0")/../.."

KILN=${KILN:-build/asan/kiln}
[ -x "$KILN" ] || KILN=build/kiln
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { fail=$((fail + 1)); echo "FAIL $1"; }

tmp=$(mktemp -d)
fake_pid=
cleanup() {
	[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

FAKE_AWS_KEYS="AKIDFAKEKILN:fake/secret+key,AKIDPROFILE:profile/secret" \
	/usr/bin/python3 tests/fake-model/fake_model.py --port-file "$tmp/port" --max-seconds 600 \
	2>"$tmp/fake.log" &
fake_pid=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if [ ! -s "$tmp/port" ]; then
	cat "$tmp/fake.log"
	echo "52-providers: 0 passed, 1 failed"
	exit 1
fi
url="http://127.0.0.1:$(cat "$tmp/port")"
export XDG_STATE_HOME="$tmp/state" XDG_CACHE_HOME="$tmp/cache" XDG_CONFIG_HOME="$tmp/config"
unset KILN_API_KEY KILN_MODEL KILN_LLM_PROVIDER KILN_LLM_URL ANTHROPIC_API_KEY
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION
unset AWS_PROFILE AWS_BEARER_TOKEN_BEDROCK
export AWS_SHARED_CREDENTIALS_FILE=/nonexistent AWS_CONFIG_FILE=/nonexistent

# requests PYTHON-EXPR: fetch (and clear) what the fake server received;
# the expression sees `reqs` (a list of {method, path, headers, sigv4})
# and `today` (UTC YYYYMMDD) and must be true.
requests() {
	/usr/bin/python3 - "$url" "$1" <<'EOF'
import json, sys, time, urllib.request
reqs = json.load(urllib.request.urlopen(sys.argv[1] + "/_requests"))
today = time.strftime("%Y%m%d", time.gmtime())
ok = eval(sys.argv[2])
if not ok:
    json.dump(reqs, sys.stderr, indent=1)
sys.exit(0 if ok else 1)
EOF
}
ask() {
	timeout 60 "$KILN" ask "$@" "greet" </dev/null >"$tmp/out" 2>&1
}
show() { sed 's/^/    /' "$tmp/out" | tail -n 15; }
requests True >/dev/null 2>&1

# --- Anthropic ----------------------------------------------------------------
export KILN_LLM_PROVIDER=anthropic KILN_LLM_URL=$url KILN_MODEL=fake-coder
if ANTHROPIC_API_KEY=sk-ant-wire ask && grep -q "print('hello from kiln')" "$tmp/out" &&
	requests '[r for r in reqs if r["path"] == "/v1/messages" and r["method"] == "POST"
	    and r["headers"].get("x-api-key") == "sk-ant-wire"
	    and r["headers"].get("anthropic-version") == "2023-06-01"
	    and "authorization" not in r["headers"]
	    and r["headers"].get("content-type") == "application/json"]'; then
	ok "anthropic-headers"
else ko "anthropic-headers"; show; fi
# llm.apiKey (here KILN_API_KEY) wins over ANTHROPIC_API_KEY.
if KILN_API_KEY=sk-kiln ANTHROPIC_API_KEY=sk-ant-other ask &&
	requests '[r for r in reqs if r["path"] == "/v1/messages"
	    and r["headers"].get("x-api-key") == "sk-kiln"]'; then ok "anthropic-key-precedence"
else ko "anthropic-key-precedence"; show; fi
# intent/model lists the models through GET /v1/models, with the same headers.
printf ':quit\n' | ANTHROPIC_API_KEY=sk-ant-wire timeout 60 "$KILN" shell >"$tmp/out" 2>&1
if
	requests '[r for r in reqs if r["method"] == "GET" and r["path"].startswith("/v1/models")
	    and r["headers"].get("x-api-key") == "sk-ant-wire"
	    and r["headers"].get("anthropic-version") == "2023-06-01"]'; then ok "anthropic-models"
else ko "anthropic-models"; show; fi

# --- Bedrock ------------------------------------------------------------------
export KILN_LLM_PROVIDER=bedrock KILN_MODEL=fake-coder:0
export AWS_ACCESS_KEY_ID=AKIDFAKEKILN AWS_SECRET_ACCESS_KEY=fake/secret+key
export AWS_SESSION_TOKEN=fake-session-token AWS_REGION=us-west-2
if ask && grep -q "print('hello from kiln')" "$tmp/out" &&
	requests '[r for r in reqs if r["method"] == "POST"
	    and r["path"] == "/model/fake-coder%3A0/converse-stream"
	    and r["headers"]["authorization"].startswith(
	        "AWS4-HMAC-SHA256 Credential=AKIDFAKEKILN/" + today + "/us-west-2/bedrock/aws4_request,")
	    and r["sigv4"]["ok"]
	    and r["headers"].get("x-amz-date", "").startswith(today + "T")
	    and r["headers"].get("x-amz-security-token") == "fake-session-token"
	    and "x-amz-security-token" in r["sigv4"]["signedHeaders"]
	    and "host" in r["sigv4"]["signedHeaders"]
	    and r["headers"].get("accept") == "application/vnd.amazon.eventstream"]'; then
	ok "bedrock-sigv4-session-token"
else ko "bedrock-sigv4-session-token"; show; fi
if AWS_SESSION_TOKEN= ask && grep -q "print('hello from kiln')" "$tmp/out" &&
	requests '[r for r in reqs if r["method"] == "POST" and r["sigv4"]["ok"]
	    and "x-amz-security-token" not in r["headers"]
	    and "x-amz-security-token" not in r["sigv4"]["signedHeaders"]]'; then
	ok "bedrock-sigv4-no-token"
else ko "bedrock-sigv4-no-token"; show; fi
# A model id without characters to escape, and an inference profile ARN
# (':' and '/'), both signed right.
if KILN_MODEL=fake-coder ask && requests '[r for r in reqs if r["sigv4"] and r["sigv4"]["ok"]
	    and r["path"] == "/model/fake-coder/converse-stream"]'; then ok "bedrock-plain-id"
else ko "bedrock-plain-id"; show; fi
# A wrong secret: the signature does not match, kind unauthorized.
if ! AWS_SECRET_ACCESS_KEY=wrong/secret ask && grep -q "unauthorized" "$tmp/out" &&
	grep -q "HTTP 403: The request signature we calculated" "$tmp/out" &&
	! grep -q "wrong/secret" "$tmp/out"; then ok "bedrock-wrong-secret"
else ko "bedrock-wrong-secret"; show; fi
requests True >/dev/null 2>&1

# Credentials and region from the shared files, with AWS_PROFILE.
mkdir -p "$tmp/aws"
printf '[default]\naws_access_key_id = AKIDWRONG\naws_secret_access_key = nope\n\n# the team profile\n[kiln-test]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile/secret\n' >"$tmp/aws/credentials"
printf '[default]\nregion = us-east-1\n[profile kiln-test]\nregion = eu-central-1\n' >"$tmp/aws/config"
if env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_REGION \
	AWS_PROFILE=kiln-test AWS_SHARED_CREDENTIALS_FILE="$tmp/aws/credentials" \
	AWS_CONFIG_FILE="$tmp/aws/config" sh -c 'timeout 60 "$0" ask greet </dev/null' "$KILN" \
	>"$tmp/out" 2>&1 &&
	requests '[r for r in reqs if r["sigv4"] and r["sigv4"]["ok"]
	    and r["sigv4"]["scope"] == today + "/eu-central-1/bedrock/aws4_request"
	    and r["sigv4"]["access"] == "AKIDPROFILE"
	    and "x-amz-security-token" not in r["headers"]]'; then ok "bedrock-profile-files"
else ko "bedrock-profile-files"; show; fi
# HOME's ~/.aws is where they are looked for by default.
mkdir -p "$tmp/home/.aws"
cp "$tmp/aws/credentials" "$tmp/aws/config" "$tmp/home/.aws/"
if env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_REGION \
	-u AWS_SHARED_CREDENTIALS_FILE -u AWS_CONFIG_FILE HOME="$tmp/home" AWS_PROFILE=kiln-test \
	sh -c 'timeout 60 "$0" ask greet </dev/null' "$KILN" >"$tmp/out" 2>&1 &&
	requests '[r for r in reqs if r["sigv4"] and r["sigv4"]["ok"]
	    and r["sigv4"]["access"] == "AKIDPROFILE"]'; then ok "bedrock-home-aws"
else ko "bedrock-home-aws"; show; fi
# A Bedrock API key: a bearer token, no signing.
if AWS_BEARER_TOKEN_BEDROCK=sk-bedrock-key ask &&
	requests '[r for r in reqs if r["method"] == "POST"
	    and r["headers"].get("authorization") == "Bearer sk-bedrock-key"
	    and "x-amz-date" not in r["headers"]]'; then ok "bedrock-api-key"
else ko "bedrock-api-key"; show; fi
# No region, no credentials: a config error that says where to set them.
if ! (unset AWS_REGION; ask) && grep -q "config" "$tmp/out" &&
	grep -q "Bedrock needs a region: set AWS_REGION" "$tmp/out"; then ok "bedrock-no-region"
else ko "bedrock-no-region"; show; fi
if ! (unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY; ask) &&
	grep -q "no AWS credentials for Bedrock" "$tmp/out"; then ok "bedrock-no-credentials"
else ko "bedrock-no-credentials"; show; fi
# The default endpoint is the region's bedrock-runtime host.
printf ':quit\n' | env -u KILN_LLM_URL timeout 60 "$KILN" shell >"$tmp/out" 2>&1
if grep -q "https://bedrock-runtime.us-west-2.amazonaws.com" "$tmp/out"; then
	ok "bedrock-default-url"
else ko "bedrock-default-url"; show; fi

# --- the terminal front ends against both -----------------------------------------
export KILN_MODEL=fake-coder AWS_SESSION_TOKEN=fake-session-token
for p in anthropic bedrock; do
	out=$(KILN_LLM_PROVIDER=$p ANTHROPIC_API_KEY=sk-ant-wire timeout 60 "$KILN" ask --yes "greet" </dev/null 2>&1)
	if [ $? -eq 0 ] && echo "$out" | grep -q "^hello from kiln"; then ok "ask-yes-$p"; else
		ko "ask-yes-$p"; echo "$out" | sed 's/^/    /' | tail -n 15; fi
	out=$(printf 'greet\nr\n' | KILN_LLM_PROVIDER=$p ANTHROPIC_API_KEY=sk-ant-wire timeout 60 "$KILN" shell 2>&1)
	if [ $? -eq 0 ] && echo "$out" | grep -q "^hello from kiln" &&
		echo "$out" | grep -q "print('hello from kiln')"; then ok "shell-pipe-$p"; else
		ko "shell-pipe-$p"; echo "$out" | sed 's/^/    /' | tail -n 15; fi
	out=$(KILN_LLM_PROVIDER=$p KILN_MODEL=fake-repair ANTHROPIC_API_KEY=sk-ant-wire timeout 60 "$KILN" ask --yes --auto-repair "sum" </dev/null 2>&1)
	if [ $? -eq 0 ] && echo "$out" | grep -q "^3$"; then ok "ask-repair-$p"; else
		ko "ask-repair-$p"; echo "$out" | sed 's/^/    /' | tail -n 15; fi
done

# --- the answer cache -----------------------------------------------------------
export KILN_LLM_PROVIDER=anthropic KILN_MODEL=fake-coder ANTHROPIC_API_KEY=sk-ant-cache
unset AWS_SESSION_TOKEN
printf '{"llm":{"cache":true}}\n' >"$tmp/cache.json"
cdir="$tmp/cache/kiln/llm"
requests True >/dev/null 2>&1
ask --config "$tmp/cache.json" && cp "$tmp/out" "$tmp/first"
ask --config "$tmp/cache.json"
if cmp -s "$tmp/out" "$tmp/first" && grep -q "print('hello from kiln')" "$tmp/out" &&
	requests 'len([r for r in reqs if r["path"] == "/v1/messages"]) == 1'; then
	ok "cache-asks-once"
else ko "cache-asks-once"; show; fi
if [ "$(ls "$cdir" | wc -l)" -eq 1 ] && [ "$(stat -c %a "$cdir"/*.json)" = 600 ] &&
	[ "$(stat -c %a "$cdir")" = 700 ] && ! grep -q "sk-ant-cache\|127.0.0.1" "$cdir"/*.json &&
	grep -q '"answer":' "$cdir"/*.json; then ok "cache-file-0600-no-key"
else ko "cache-file-0600-no-key"; ls -la "$cdir"; fi
# Another model is another key.
KILN_MODEL=fake-slow ask --config "$tmp/cache.json"
if requests 'len([r for r in reqs if r["path"] == "/v1/messages"]) == 1' &&
	[ "$(ls "$cdir" | wc -l)" -eq 2 ]; then ok "cache-key-has-model"
else ko "cache-key-has-model"; fi
out=$(timeout 30 "$KILN" cache clear 2>&1)
if [ "$out" = "removed 2 cached answers ($(cat "$cdir"/* 2>/dev/null | wc -c) bytes) from $cdir" ] ||
	echo "$out" | grep -q "^removed 2 cached answers"; then
	[ -z "$(ls "$cdir")" ] && ok "cache-clear" || ko "cache-clear (files left)"
else ko "cache-clear: $out"; fi
# Past cacheMaxBytes the entry used longest ago goes first: with room for
# one answer, asking for a second evicts the first, which the model is
# then asked for again.
ask --config "$tmp/cache.json"
size=$(stat -c %s "$cdir"/*.json)
printf '{"llm":{"cache":true,"cacheMaxBytes":%d}}\n' $((size * 3 / 2)) >"$tmp/cache-small.json"
requests True >/dev/null 2>&1
timeout 60 "$KILN" ask --config "$tmp/cache-small.json" "greet twice" </dev/null >/dev/null 2>&1
ask --config "$tmp/cache-small.json"
if [ "$(ls "$cdir" | wc -l)" -eq 1 ] &&
	requests 'len([r for r in reqs if r["path"] == "/v1/messages"]) == 2'; then ok "cache-evicts-oldest"
else ko "cache-evicts-oldest"; ls -la "$cdir"; fi
# Without llm.cache nothing is read or written.
timeout 30 "$KILN" cache clear >/dev/null 2>&1
ask
ask
if [ -z "$(ls "$cdir")" ] && requests 'len([r for r in reqs if r["path"] == "/v1/messages"]) == 2'; then
	ok "cache-off-by-default"
else ko "cache-off-by-default"; fi
if ! timeout 30 "$KILN" cache wipe >/dev/null 2>&1; then ok "cache-usage"; else ko "cache-usage"; fi

# --- secrets stay put ---------------------------------------------------------
KILN_SHELL_LOG_LEVEL=debug ANTHROPIC_API_KEY=sk-ant-wire ask
if grep -q "fake/secret+key\|fake-session-token\|sk-ant-wire" "$tmp/out"; then
	ko "no-secret-in-log"; show
else ok "no-secret-in-log"; fi
printf 'import os\nprint(sorted(os.environ))\n' >"$tmp/env.py"
ANTHROPIC_API_KEY=sk-ant-wire timeout 60 "$KILN" run "$tmp/env.py" >"$tmp/out" 2>&1
if [ $? -eq 0 ] && ! grep -q "AWS_\|ANTHROPIC\|fake-session" "$tmp/out"; then
	ok "no-secret-in-sandbox"
else ko "no-secret-in-sandbox"; show; fi

echo "52-providers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
