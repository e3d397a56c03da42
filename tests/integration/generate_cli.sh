# `pacer generate` and client.generate against the real endpoint: a tiny GPT trained on text
# through the coordinator, then its text asked for three ways (the CLI's event stream, the
# CLI's --json whole answer, the Python client): greedy decoding gives the same text each
# time and each way (the client's stream=True too, a piece per token), a seed gives the same
# sample twice (streamed and whole), the CLI's
# Accept is answered with token events, and the API's refusals come back
# named (an unknown job: exit 1 and PacerError 404; max_tokens out of bounds: the field).
# The endpoint's own rules (owners, checkpoints, bounds) are its tests'; this one checks
# that the callers and the endpoint agree.
. tests/integration/coordinator_lib.inc
PACER=$BUILD/pacer
[ -x "$PACER" ] || skip "$PACER not built: libcurl missing (make deps installs libcurl4-openssl-dev)"
need_api_tools
LIC=/usr/share/common-licenses
[ -r "$LIC/GPL-3" ] && [ -r "$LIC/LGPL-2.1" ] || skip "$LIC (Debian's base-files) is not here"
mkdir -p "$TMP/root/lic"
cp "$LIC/GPL-3" "$TMP/root/lic/train.txt"
cp "$LIC/LGPL-2.1" "$TMP/root/lic/val.txt"
start_coord --data-root "$TMP/root"
jq -n --arg data "$TMP/root/lic" '{name: "gen-cli", model: {gpt: {layers: 1, heads: 2, embd: 16, block_size: 16}},
      dataset: {format: "text", path: $data, train_subset: 64, test_subset: 16}, batch_size: 8, epochs: 1,
      seed: 2, device: "cpu", log_every: 0, optimizer: {kind: "adamw", lr: 0.003},
      checkpoint: {every_steps: 4}}' >"$TMP/gpt.json"
id=$(submit "$TMP/gpt.json")
cli wait "$id" --timeout 300 >/dev/null || { cat "$STATE/jobs/$id/log"; fail "GPT job $id did not succeed"; }
export PACER_URL=$(api_base)
p() { "$PACER" "$@"; }

# ---- greedy: the same text streamed twice, whole, and through the Python client --------------
p generate "$id" "GNU General" --max-tokens 24 --temperature 0 >"$TMP/g1" 2>"$TMP/e1" ||
    fail "generate exited $?: $(cat "$TMP/e1")"
p generate "$id" "GNU General" --max-tokens 24 --temperature 0 >"$TMP/g2" 2>/dev/null || fail "second generate"
cmp -s "$TMP/g1" "$TMP/g2" || fail "greedy decoding differs between two runs: '$(cat "$TMP/g1")' / '$(cat "$TMP/g2")'"
grep -q "24 tokens after a prompt of 11" "$TMP/e1" || fail "the counts: $(cat "$TMP/e1")"
p generate "$id" "GNU General" --max-tokens 24 --temperature 0 --json >"$TMP/whole.json" || fail "generate --json"
[ "$(jq -r .text "$TMP/whole.json")" = "$(cat "$TMP/g1")" ] ||
    fail "the whole answer's text differs from the stream's: $(jq -r .text "$TMP/whole.json") / $(cat "$TMP/g1")"
PYTHONPATH=clients/python python3 - "$PACER_URL" "$id" "$TMP/whole.json" <<'PY' || fail "client.generate's checks failed"
import json, sys
import pacer

client = pacer.Client(sys.argv[1])
ans = client.generate(sys.argv[2], "GNU General", max_tokens=24, temperature=0)
want = json.load(open(sys.argv[3]))
assert ans["text"] == want["text"] and ans["tokens"] == 24 and ans["prompt_tokens"] == 11, (ans, want)
a = client.job(sys.argv[2]).generate("GNU General", max_tokens=16, temperature=1.0, top_k=8, seed=5)
b = client.generate(sys.argv[2], "GNU General", max_tokens=16, temperature=1.0, top_k=8, seed=5)
assert a["text"] == b["text"], (a, b)
s = client.generate(sys.argv[2], "GNU General", max_tokens=24, temperature=0, stream=True)
pieces = list(s)
assert len(pieces) == 24 and "".join(pieces) == want["text"] and s.result["text"] == want["text"], (pieces, s.result)
try:
    client.generate("j-nosuch", "x")
    raise SystemExit("an unknown job did not raise")
except pacer.PacerError as e:
    assert e.status == 404, e
PY

# ---- a seed gives the same sample twice ---------------------------------------------------------
p generate "$id" "GNU General" --max-tokens 16 --temperature 1 --top-k 8 --seed 5 >"$TMP/s1" 2>/dev/null || fail "sample 1"
p generate "$id" "GNU General" --max-tokens 16 --temperature 1 --top-k 8 --seed 5 >"$TMP/s2" 2>/dev/null || fail "sample 2"
cmp -s "$TMP/s1" "$TMP/s2" || fail "seed 5 gave two texts: '$(cat "$TMP/s1")' / '$(cat "$TMP/s2")'"
[ "$(tr -d ' \n' <"$TMP/s1" | wc -c)" -gt 0 ] || fail "the sample is blank: '$(cat "$TMP/s1")'"
p generate "$id" "GNU General" --max-tokens 16 --temperature 1 --top-k 8 --seed 5 --json >"$TMP/s.json" || fail "sample --json"
[ "$(jq -r .text "$TMP/s.json")" = "$(cat "$TMP/s1")" ] ||
    fail "the whole sample differs from the streamed one: '$(jq -r .text "$TMP/s.json")' / '$(cat "$TMP/s1")'"
# the CLI's request is answered as a stream of token events, as it printed them
curl -sN -H "Accept: text/event-stream, application/json;q=0.5" -H "$JSON" -D "$TMP/hdr" -d \
    '{"prompt": "GNU General", "max_tokens": 4, "temperature": 0}' "$PACER_URL/api/v1/jobs/$id/generate" >"$TMP/sse"
grep -qi "^content-type: text/event-stream" "$TMP/hdr" && [ "$(grep -c "^event: token" "$TMP/sse")" = 4 ] &&
    grep -q "^event: done" "$TMP/sse" || fail "no event stream for the CLI's Accept: $(cat "$TMP/hdr" "$TMP/sse")"

# ---- refusals, named ------------------------------------------------------------------------------
p generate j-nosuch "x" >/dev/null 2>"$TMP/err"; rc=$?
[ $rc -eq 1 ] && grep -q "(HTTP 404)" "$TMP/err" || fail "an unknown job: exit $rc, $(cat "$TMP/err")"
p generate "$id" "x" --max-tokens 100000 >/dev/null 2>"$TMP/err"; rc=$?
[ $rc -eq 1 ] && grep -q "max_tokens" "$TMP/err" || fail "max_tokens out of bounds: exit $rc, $(cat "$TMP/err")"
echo "ok: pacer generate (streamed and whole) and client.generate give job $id's greedy text alike: $(head -c 60 "$TMP/g1")"
stop_coord
