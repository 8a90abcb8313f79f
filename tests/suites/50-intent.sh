#!/bin/sh
# 50-intent.sh: the run-intent pipeline against a fake model server that
# speaks both wire formats (tests/fake-model/fake_model.py): every
# transcript in protocol/transcripts/intent/ (*.test) and intent/model/
# (*.test.in: they need the fake server and the KILN_TEST_* variables, so
# 15-transcripts.sh, which plays every *.test, leaves them out) is played
# once per provider
# (Ollama's /api/chat, the OpenAI-compatible /v1/chat/completions,
# Anthropic's /v1/messages and Bedrock's converse-stream; each provider's
# own failure modes are in intent/model/PROVIDER/), then
# a session recorded with `kiln --record` is replayed, then `kiln ask` and
# `kiln shell` are driven through pipes. Loopback only; bounded in time.
# KILN_TEST_ONLY="repair lsp-write-code ..." (make mutate) plays only the
# transcripts of those names (without .test.in), for every provider, and
# nothing else.
set -u
cd "$(dirname "$0")/../.."

KILN=${KILN:-build/asan/kiln}
[ -x "$KILN" ] || KILN=build/kiln
pass=0
fail=0
skipped=0
# KILN_TEST_NODE=/nonexistent shows the skips that a machine without node sees.
node=${KILN_TEST_NODE:-/usr/bin/node}
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { fail=$((fail + 1)); echo "FAIL $1"; }
# make deps installs nodejs: without it (and no KILN_TEST_NODE asking for
# the skips) the JavaScript cases are skipped and the suite fails.
if [ ! -x "$node" ] && [ -z "${KILN_TEST_NODE:-}" ]; then
	ko "/usr/bin/node is missing (make deps installs nodejs)"
fi

tmp=$(mktemp -d)
fake_pid=
cleanup() {
	[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# The fake model server picks its own loopback port and writes it down.
# Its own end is a backstop (cleanup kills it): under load (two cores, a
# load of 5 or more) the suite took over 900 s and the last provider's
# transcripts met a dead server, so the backstop is far past that.
/usr/bin/python3 tests/fake-model/fake_model.py --port-file "$tmp/port" --max-seconds 3600 \
	--served-log "$tmp/served" 2>"$tmp/fake.log" &
fake_pid=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if [ ! -s "$tmp/port" ]; then
	echo "50-intent: the fake model server did not start:"
	cat "$tmp/fake.log"
	echo "50-intent: 0 passed, 1 failed"
	exit 1
fi
url="http://127.0.0.1:$(cat "$tmp/port")"
export KILN_TEST_MODEL_URL="$url"
export KILN_TEST_STATE="$tmp/state"
# A config file for the precedence transcripts (file over environment,
# initializationOptions over file). The URL comes from the environment.
mkdir -p "$tmp/state"
echo '{"llm":{"model":"fake-nocode"}}' >"$tmp/state/config.json"
# Sanitizer builds report leaks at exit; the transcripts' %exit checks
# would see them as crashes, which is what we want.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

# --- transcripts, once per provider ------------------------------------------
# The fake server's Anthropic wants an x-api-key (replay drops KILN_*, so
# the key comes the way Anthropic's SDKs take it); its Bedrock checks the
# SigV4 signature against these credentials, session token and region.
export ANTHROPIC_API_KEY=sk-ant-fake-test
export AWS_ACCESS_KEY_ID=AKIDFAKEKILN AWS_SECRET_ACCESS_KEY=fake/secret+key
export AWS_SESSION_TOKEN=fake-session-token AWS_REGION=us-west-2
export AWS_SHARED_CREDENTIALS_FILE=/nonexistent AWS_CONFIG_FILE=/nonexistent
unset AWS_PROFILE AWS_DEFAULT_REGION AWS_BEARER_TOKEN_BEDROCK
for provider in ollama openai anthropic bedrock; do
	export KILN_TEST_PROVIDER=$provider
	: >"$tmp/served"
	# intent/*.test need no model server (15-transcripts.sh plays them
	# too); intent/model/*.test.in need the fake one and the KILN_TEST_*
	# variables, so they are named apart from what 15 plays.
	for t in protocol/transcripts/intent/*.test protocol/transcripts/intent/model/*.test.in \
		protocol/transcripts/intent/model/$provider/*.test.in; do
		[ -e "$t" ] || continue
		name="$provider/${t#protocol/transcripts/intent/}"
		name=${name%.test.in}
		name=${name%.test}
		if [ -n "${KILN_TEST_ONLY:-}" ]; then
			case " $KILN_TEST_ONLY " in *" ${name##*/} "*) ;; *) continue ;; esac
		fi
		# JavaScript proposals run (and are checked) with node: without
		# it they are skipped, said, and counted neither way.
		case "$t" in */javascript-*)
			if [ ! -x "$node" ]; then
				echo "SKIP $name (/usr/bin/node is not installed)"
				skipped=$((skipped + 1))
				continue
			fi
		esac
		if "$KILN" replay --server "$KILN" "$t" >"$tmp/out" 2>&1; then
			ok "$name"
		else
			ko "$name"
			sed 's/^/    /' "$tmp/out" | tail -n 30
		fi
	done
	[ -n "${KILN_TEST_ONLY:-}" ] && continue
	# The fake model says what it served: every request of this
	# provider's transcripts came to its endpoint, and the keyed one
	# (keyed.test.in) carried its key there.
	# Anthropic takes the key as x-api-key; Bedrock names the model in
	# the path and takes an API key as a bearer token.
	case $provider in
	ollama) endpoint=/api/chat keyed='"model":"fake-401","authorization":"Bearer sk-good"' ;;
	openai) endpoint=/v1/chat/completions keyed='"model":"fake-401","authorization":"Bearer sk-good"' ;;
	anthropic) endpoint=/v1/messages keyed='"model":"fake-401","authorization":null,"apiKey":"sk-good"' ;;
	bedrock) endpoint=/model/ keyed='"model":"fake-401","authorization":"Bearer sk-good"' ;;
	esac
	others=$(grep -v "\"path\":\"$endpoint" "$tmp/served" | head -n 3)
	if [ -s "$tmp/served" ] && [ -z "$others" ] &&
		grep "\"path\":\"$endpoint" "$tmp/served" | grep -qF "$keyed"; then
		ok "$provider/endpoint-and-key-served"
	else
		ko "$provider/endpoint-and-key-served: requests elsewhere: ${others:-none}"
		sed 's/^/    /' "$tmp/served" | tail -n 5
	fi
done

if [ -n "${KILN_TEST_ONLY:-}" ]; then
	echo "50-intent: $pass passed, $fail failed (only: $KILN_TEST_ONLY)"
	[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
	exit
fi

# --- a recorded session replays ------------------------------------------------
sh tests/fake-model/record-session.sh "$KILN" "$url" "$tmp" >"$tmp/rec.out" 2>&1
if [ $? -eq 0 ]; then
	ok "record-replay"
else
	ko "record-replay"
	sed 's/^/    /' "$tmp/rec.out" | tail -n 30
fi

# --- the audit log got a line per proposal, approval and run -------------------
audit="$tmp/state/kiln/audit.jsonl"
if [ -s "$audit" ] && grep -q '"event":"proposal"' "$audit" &&
	grep -q '"event":"approval"' "$audit" && grep -q '"event":"run"' "$audit" &&
	grep -q '"codeSha256":"[0-9a-f]\{64\}"' "$audit"; then
	ok "audit-log"
else
	ko "audit-log"
fi
# The API keys of successful, keyed sessions (keyed.test.in with sk-good,
# the recorded session with sk-secret-...) never reach the log, which
# does have their records.
if grep -q '"event":"run".*"ok":true' "$audit" && grep -q '"model":"fake-401"' "$audit" &&
	grep -q '"model":"fake-repair"' "$audit" && ! grep -qE 'sk-(good|secret|wrong)' "$audit"; then
	ok "audit-no-key"
else
	ko "audit-no-key"
	grep -nE 'sk-(good|secret|wrong)' "$audit" | head -n 3 | sed 's/^/    /'
fi
# Nor do the Anthropic key, the AWS secret or the session token, anywhere
# kiln writes state.
if grep -rq 'sk-ant-fake\|fake/secret+key\|fake-session-token' "$tmp/state" 2>/dev/null; then
	ko "state-no-secrets"; else ok "state-no-secrets"; fi

# --- kiln ask and kiln shell through pipes -------------------------------------
export XDG_STATE_HOME="$tmp/state"
out=$(KILN_LLM_URL=$url KILN_MODEL=fake-coder timeout 60 "$KILN" ask --yes "greet" </dev/null 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q "hello from kiln"; then ok "ask-yes"; else
	ko "ask-yes"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
out=$(KILN_LLM_URL=$url KILN_MODEL=fake-coder timeout 60 "$KILN" ask "greet" </dev/null 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q "print('hello from kiln')" &&
	! echo "$out" | grep -q "^hello from kiln"; then ok "ask-propose-only"; else
	ko "ask-propose-only"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
out=$(KILN_LLM_URL=$url KILN_MODEL=fake-nocode timeout 60 "$KILN" ask --yes "greet" </dev/null 2>&1)
if [ $? -ne 0 ] && echo "$out" | grep -q "no_code"; then ok "ask-no-code"; else
	ko "ask-no-code"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
printf '{"llm":{"url":"%s","model":"fake-coder"}}\n' "$url" >"$tmp/ask.json"
out=$(KILN_MODEL=fake-nocode timeout 60 "$KILN" ask --config "$tmp/ask.json" --yes "greet" </dev/null 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q "^hello from kiln"; then ok "ask-config-file"; else
	ko "ask-config-file"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
out=$(printf 'greet\nr\n' | KILN_LLM_URL=$url KILN_MODEL=fake-coder timeout 60 "$KILN" shell 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q "hello from kiln" &&
	echo "$out" | grep -q "print('hello from kiln')"; then ok "shell-pipe-model"; else
	ko "shell-pipe-model"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
# No model server at all: said once, and typed code runs directly.
out=$(printf 'print(6 * 7)\nprint("again")\n' | KILN_LLM_URL=http://127.0.0.1:9 timeout 60 "$KILN" shell 2>&1)
rc=$?
n=$(echo "$out" | grep -c "cannot reach")
if [ $rc -eq 0 ] && [ "$n" -eq 1 ] && echo "$out" | grep -q "^42$" && echo "$out" | grep -q "^again$"; then
	ok "shell-pipe-no-model"; else ko "shell-pipe-no-model"; echo "$out" | sed 's/^/    /' | tail -n 20; fi

# --- languages: every name the registry knows, and only those ------------------
# kiln ask --lang javascript failed at approve ("unknown language
# 'javascript'"); --lang ruby went to the model.
if [ -x "$node" ]; then
	out=$(KILN_LLM_URL=$url KILN_MODEL=fake-coder timeout 60 "$KILN" ask --lang javascript --yes "greet" </dev/null 2>&1)
	if [ $? -eq 0 ] && echo "$out" | grep -q "console.log('hello from kiln')" &&
		echo "$out" | grep -q "^hello from kiln"; then ok "ask-lang-javascript"; else
		ko "ask-lang-javascript"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
	out=$(printf ':lang js\ngreet\nr\n' | KILN_LLM_URL=$url KILN_MODEL=fake-coder timeout 60 "$KILN" shell 2>&1)
	if [ $? -eq 0 ] && echo "$out" | grep -q "language: javascript" &&
		echo "$out" | grep -q "console.log('hello from kiln')" &&
		echo "$out" | grep -q "^hello from kiln"; then ok "shell-lang-js"; else
		ko "shell-lang-js"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
else
	echo "SKIP ask-lang-javascript, shell-lang-js (/usr/bin/node is not installed)"
	skipped=$((skipped + 2))
fi
out=$(KILN_LLM_URL=$url KILN_MODEL=fake-coder timeout 60 "$KILN" ask --lang ruby --yes "greet" </dev/null 2>&1)
rc=$?
if [ $rc -eq 2 ] && echo "$out" | grep -q "unknown language 'ruby' (kiln knows python (py, python3, py3), bash"; then
	ok "ask-lang-unknown"; else
	ko "ask-lang-unknown (exit $rc)"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
out=$(printf ':lang ruby\n:lang\n' | KILN_LLM_URL=$url KILN_MODEL=fake-coder timeout 60 "$KILN" shell 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q "unknown language 'ruby' (kiln knows" &&
	[ "$(echo "$out" | grep -c "^language: python")" -eq 2 ]; then ok "shell-lang-unknown-kept"; else
	ko "shell-lang-unknown-kept"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
out=$(KILN_LLM_URL=$url timeout 60 "$KILN" shell --lang ruby </dev/null 2>&1)
rc=$?
if [ $rc -eq 2 ] && echo "$out" | grep -q "kiln shell: unknown language 'ruby' (kiln knows"; then
	ok "shell-lang-unknown-option"; else
	ko "shell-lang-unknown-option (exit $rc)"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
# A language the config file adds is a name shell accepts: with a
# grammar named it is validated and runs; without one the server says the
# validator cannot check it, and the shell does not run it unchecked.
printf '{"sandbox":{"languages":{"perl":{"argv":["/usr/bin/perl","{file}"],"file":"a.pl"},"py-u":{"argv":["/usr/bin/python3","-u","{file}"],"file":"m.py","validator":"python"}}}}\n' >"$tmp/langs.json"
out=$(printf 'print(6 * 7)\n' | KILN_LLM_URL=http://127.0.0.1:9 timeout 60 "$KILN" shell --config "$tmp/langs.json" --lang py-u 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q "^42$"; then ok "shell-lang-from-config"; else
	ko "shell-lang-from-config"; echo "$out" | sed 's/^/    /' | tail -n 20; fi
out=$(printf 'print "perl ok\\n";\n' | KILN_LLM_URL=http://127.0.0.1:9 timeout 60 "$KILN" shell --config "$tmp/langs.json" --lang perl 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q "the validator cannot check perl code" &&
	! echo "$out" | grep -q "^perl ok$"; then ok "shell-lang-from-config-unchecked"; else
	ko "shell-lang-from-config-unchecked"; echo "$out" | sed 's/^/    /' | tail -n 20; fi

if [ "$skipped" -gt 0 ]; then
	echo "50-intent: $pass passed, $fail failed ($skipped skipped: no node)"
	[ "$fail" -eq 0 ]
	exit
fi
echo "50-intent: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
