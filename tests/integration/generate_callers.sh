# `pacer generate` and the Python client's client.generate as callers of POST
# /api/v1/jobs/{id}/generate, against a stand-in for the endpoint (tests/tools/
# generate_stub.py): each sends the prompt and exactly the options given (so the
# coordinator's defaults and bounds apply), percent-encodes the job id and sends the token;
# the CLI prints the text on stdout as it comes ("token" events; a whole JSON answer too;
# control characters as '?' on a terminal) and the counts
# on stderr (--json: the answer), reads
# the prompt from stdin for -, refuses malformed numbers by option name (exit 2), and
# reports the API's 400 (the field) and 404 with exit 1. Generation itself is the
# endpoint's test; this one checks only the callers.
. tests/lib.sh
PACER=$BUILD/pacer
[ -x "$PACER" ] || skip "$PACER not built: libcurl missing (make deps installs libcurl4-openssl-dev)"
command -v python3 >/dev/null || skip "python3 not installed"
command -v jq >/dev/null || skip "jq not installed (make deps)"

STUB_PID=""
SLOW=""
trap 'for p in $STUB_PID $SLOW; do kill -9 "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
python3 tests/tools/generate_stub.py "$TMP/port" "$TMP/got.jsonl" &
STUB_PID=$!
i=0
while [ ! -s "$TMP/port" ]; do
    i=$((i + 1))
    [ $i -le 300 ] || fail "the stub did not listen within 30 s"
    sleep 0.1
done
export PACER_URL=http://127.0.0.1:$(cat "$TMP/port") PACER_TOKEN=gen-token
last() { tail -1 "$TMP/got.jsonl" | jq -c "$1"; }
gen() { "$PACER" generate "$@" >"$TMP/out" 2>"$TMP/err"; }

# ---- every option given: each is sent under its API name, with its JSON type --------------
gen job-1 "Hello" --max-tokens 5 --temperature 0.7 --top-k 3 --seed 42 --checkpoint best ||
    fail "generate exited $?: $(cat "$TMP/err")"
[ "$(cat "$TMP/out")" = "Hello and more" ] || fail "stdout is not the text alone: $(cat "$TMP/out")"
grep -q "5 tokens after a prompt of 5, 250.0 tokens/s" "$TMP/err" || fail "no counts on stderr: $(cat "$TMP/err")"
[ "$(last .path)" = '"/api/v1/jobs/job-1/generate"' ] || fail "path $(last .path)"
[ "$(last .auth)" = '"Bearer gen-token"' ] || fail "the token was not sent: $(last .auth)"
[ "$(last .content_type)" = '"application/json"' ] || fail "content type $(last .content_type)"
[ "$(last '.body == {"prompt":"Hello","max_tokens":5,"temperature":0.7,"top_k":3,"seed":42,"checkpoint":"best"}')" = true ] ||
    fail "body $(last .body)"

# ---- no options: the prompt alone (the coordinator's defaults apply); the id encoded ----------
gen "a/b c" "Hi" || fail "generate exited $?: $(cat "$TMP/err")"
[ "$(last .body)" = '{"prompt":"Hi"}' ] || fail "options not given were sent: $(last .body)"
[ "$(last .path)" = '"/api/v1/jobs/a%2Fb%20c/generate"' ] || fail "job id not percent-encoded: $(last .path)"

# ---- the prompt from stdin, a long one said to be cut; --json prints the answer -------------
printf 'line one\nline two, long enough to pass the stub cut of sixty-four bytes easily\n' |
    "$PACER" generate job-1 - --json >"$TMP/out" 2>"$TMP/err" || fail "generate - exited $?: $(cat "$TMP/err")"
[ "$(last '.body.prompt | startswith("line one\nline two")')" = true ] || fail "stdin prompt $(last .body)"
[ "$(jq -r .prompt_truncated "$TMP/out")" = true ] || fail "--json did not print the answer: $(cat "$TMP/out")"
"$PACER" generate job-1 "$(printf 'x%.0s' $(seq 80))" >/dev/null 2>"$TMP/err" || fail "long prompt: $(cat "$TMP/err")"
grep -q "the prompt was cut to the model's last block_size tokens" "$TMP/err" || fail "no cut notice: $(cat "$TMP/err")"

# ---- a model may write an escape sequence: as is into a pipe, '?' on a terminal ---------------
ESC=$(printf '\033')
gen job-1 "${ESC}[2Jred	tab" || fail "escape prompt: $(cat "$TMP/err")"
[ "$(cat "$TMP/out")" = "${ESC}[2Jred	tab and more" ] || fail "the text into a pipe was changed"
if command -v script >/dev/null; then
    script -qfec "$PACER generate job-1 \"\$(printf '\\033[2Jred')\"" /dev/null >"$TMP/tty.txt" 2>&1 </dev/null ||
        fail "generate on a terminal: $(cat "$TMP/tty.txt")"
    grep -q '?\[2Jred and more' "$TMP/tty.txt" && ! grep -q "$ESC" "$TMP/tty.txt" ||
        fail "an escape sequence reached the terminal: $(od -c "$TMP/tty.txt" | head -5)"
fi

# ---- the stream: the text as it comes, the whole answer without one -------------------------------
"$PACER" generate slow "Tick" >"$TMP/slow.out" 2>"$TMP/slow.err" &
SLOW=$!
i=0
until [ "$(cat "$TMP/slow.out")" = "T" ]; do
    i=$((i + 1))
    [ $i -le 300 ] || fail "the first token was not printed before the stream ended: '$(cat "$TMP/slow.out")'"
    sleep 0.1
done
touch "$TMP/got.jsonl.go"
wait $SLOW || fail "the slow stream exited $?: $(cat "$TMP/slow.err")"
[ "$(cat "$TMP/slow.out")" = "Tick and more" ] || fail "the streamed text: $(cat "$TMP/slow.out")"
grep -q "16 tokens after a prompt of 4" "$TMP/slow.err" || fail "no counts after the stream: $(cat "$TMP/slow.err")"
gen whole-1 "Hi" || fail "a whole JSON answer: exit $?: $(cat "$TMP/err")"
[ "$(cat "$TMP/out")" = "Hi and more" ] && grep -q "16 tokens after a prompt of 2" "$TMP/err" ||
    fail "a coordinator that answers whole: $(cat "$TMP/out") / $(cat "$TMP/err")"
gen broken "Hi"; rc=$?
[ $rc -eq 1 ] && [ "$(cat "$TMP/out")" = "H" ] &&
    grep -q "generation failed: the generation process exited: killed at its memory limit" "$TMP/err" ||
    fail "an error event: exit $rc, $(cat "$TMP/out") / $(cat "$TMP/err")"
gen broken-problem "Hi"; rc=$?
[ $rc -eq 1 ] && grep -q "Generation failed: the generation process timed out" "$TMP/err" ||
    fail "an error event with a problem detail: exit $rc, $(cat "$TMP/err")"
gen cut "Hi"; rc=$?
[ $rc -eq 3 ] && grep -q 'ended before its answer (no "done" event)' "$TMP/err" ||
    fail "a stream without its answer: exit $rc, $(cat "$TMP/err")"

# ---- the API's refusals: its detail, exit 1 ---------------------------------------------------
gen job-1 "Hi" --max-tokens 5000; rc=$?
[ $rc -eq 1 ] || fail "a 400 exited $rc"
grep -q "max_tokens: must be a whole number from 1 to 1024" "$TMP/err" || fail "400 not named: $(cat "$TMP/err")"
gen nosuch "Hi"; rc=$?
[ $rc -eq 1 ] && grep -q "job nosuch not found" "$TMP/err" || fail "a 404 exited $rc: $(cat "$TMP/err")"

# ---- bad usage: refused by option name before any request, exit 2 ------------------------------
n=$(wc -l <"$TMP/got.jsonl")
for bad in "--max-tokens abc|--max-tokens: 'abc' is not a whole number" "--max-tokens 0|--max-tokens: '0'" \
    "--temperature -1|--temperature: '-1' is not a number" "--temperature nan|--temperature: 'nan'" \
    "--top-k 2.5|--top-k: '2.5' is not a whole number" "--seed -3|--seed: '-3' is not a whole number"; do
    opts=${bad%%|*} want=${bad#*|}
    # shellcheck disable=SC2086
    gen job-1 "Hi" $opts; rc=$?
    [ $rc -eq 2 ] && grep -qF -- "$want" "$TMP/err" || fail "$opts: exit $rc, $(cat "$TMP/err")"
done
gen job-1; rc=$?
[ $rc -eq 2 ] && grep -q "usage: pacer generate ID PROMPT" "$TMP/err" || fail "no prompt: exit $rc, $(cat "$TMP/err")"
"$PACER" ls --seed 3 >/dev/null 2>"$TMP/err"; rc=$?
[ $rc -eq 2 ] && grep -q "ls: --seed does not apply to ls" "$TMP/err" || fail "ls --seed: exit $rc"
printf 'bad \377 byte' | "$PACER" generate job-1 - >/dev/null 2>"$TMP/err"; rc=$?
[ $rc -eq 2 ] && grep -q "PROMPT is not valid UTF-8" "$TMP/err" || fail "invalid UTF-8: exit $rc, $(cat "$TMP/err")"
[ "$(wc -l <"$TMP/got.jsonl")" -eq "$n" ] || fail "a refused command line still sent a request"

# ---- the Python client ---------------------------------------------------------------------------
PYTHONPATH=clients/python python3 - "$PACER_URL" "$TMP/got.jsonl" <<'PY' || fail "client.generate's checks failed"
import json, os, sys
import pacer

client = pacer.Client(sys.argv[1], "gen-token")
last = lambda: json.loads(open(sys.argv[2]).read().splitlines()[-1])
ans = client.generate("job-1", "Hello", max_tokens=5, temperature=0, top_k=3, seed=42, checkpoint="latest")
assert ans["text"] == "Hello and more" and ans["tokens"] == 5, ans
got = last()
assert got["body"] == {"prompt": "Hello", "max_tokens": 5, "temperature": 0, "top_k": 3, "seed": 42,
                       "checkpoint": "latest"}, got
assert got["auth"] == "Bearer gen-token" and got["path"] == "/api/v1/jobs/job-1/generate", got
client.job("a/b").generate("Hi")
assert last()["body"] == {"prompt": "Hi"} and last()["path"] == "/api/v1/jobs/a%2Fb/generate", last()
try:
    client.generate("job-1", "Hi", max_tokens=5000)
    raise SystemExit("a 400 did not raise")
except pacer.PacerError as e:
    assert e.status == 400 and e.problem.get("field") == "max_tokens" and "max_tokens" in str(e), e
try:
    client.generate("nosuch", "Hi")
    raise SystemExit("a 404 did not raise")
except pacer.PacerError as e:
    assert e.status == 404 and "job nosuch not found" in str(e), e
for kw, word in ((dict(prompt=b"bytes"), "prompt must be a str"), (dict(prompt="x", max_tokens="5"), "max_tokens"),
                 (dict(prompt="x", seed=True), "seed"), (dict(prompt="x", temperature="hot"), "temperature")):
    n = len(open(sys.argv[2]).read().splitlines())
    try:
        client.generate("job-1", **kw)
        raise SystemExit("%r was sent" % (kw,))
    except pacer.PacerError as e:
        assert word in str(e), (kw, e)
    assert len(open(sys.argv[2]).read().splitlines()) == n, "a refused call still sent a request"
# stream=True: each piece as its event arrives (the stub holds "slow" after its first
# token until OUT.go exists), then the answer; errors raise after the pieces before them
go = sys.argv[2] + ".go"
os.remove(go)
s = client.generate("slow", "Tick", max_tokens=7, stream=True)
it = iter(s)
assert next(it) == "T" and s.result is None
open(go, "w").close()
assert "".join(it) == "ick and more" and s.text == "Tick and more", s.text
assert s.result == {"text": "Tick and more", "tokens": 7, "prompt_tokens": 4, "tokens_per_s": 250.0,
                    "prompt_truncated": False}, s.result
assert last()["body"] == {"prompt": "Tick", "max_tokens": 7}, last()
w = client.job("whole-1").generate("Hi", stream=True)
assert list(w) == ["Hi and more"] and w.result["tokens"] == 16, w.result
for job, word in (("broken", "generation failed: the generation process exited: killed at its memory limit"),
                  ("broken-problem", "Generation failed: the generation process timed out"),
                  ("cut", 'ended before its answer (no "done" event)')):
    got = []
    try:
        for piece in client.generate(job, "Hi", stream=True):
            got.append(piece)
        raise SystemExit("%s: no error raised" % job)
    except pacer.PacerError as e:
        assert word in str(e), (job, e)
    assert got == (["H", "i", " ", "a", "n", "d", " ", "m", "o", "r", "e"] if job == "cut" else ["H"]), (job, got)
try:
    client.generate("nosuch", "Hi", stream=True)
    raise SystemExit("a 404 stream did not raise at the call")
except pacer.PacerError as e:
    assert e.status == 404, e
PY
echo "ok: pacer generate and client.generate send what they are given and report the API's answers"
