# POST /api/v1/jobs/{id}/generate end to end: a member's GPT job (1 block, width 16, block 16)
# trains for one epoch on the GPL through the coordinator; then the endpoint answers as JSON
# (text, tokens, prompt_tokens, tokens_per_s) and as server-sent events (token frames, then
# done), greedy answers are the same twice and equal pacer-generate's run by hand on the same
# checkpoint, a prompt longer than the window is cut and says so, and `pacer generate` prints
# the text. Refused by name: each bad field (400), an unknown job (404), another member's job
# and a viewer (403), a checkpoint the job does not have (400), a job without checkpoints (409).
# The job page's Generate card, typed into in headless Chromium, streams the same answer. The
# spec's eval_sample (the same prompt, 12 tokens) is in the history's evaluation and on the
# job page's Sample card, the same text.
. tests/integration/coordinator_lib.inc
need_api_tools
LIC=/usr/share/common-licenses
[ -r "$LIC/GPL-3" ] && [ -r "$LIC/LGPL-2.1" ] || skip "$LIC (Debian's base-files) is not here"
GEN="$BUILD/pacer-generate"
[ -x "$GEN" ] || fail "$GEN not built"
JSON="Content-Type: application/json"
mkdir -p "$TMP/root/lic"
head -c 30000 "$LIC/GPL-3" >"$TMP/root/lic/train.txt"
head -c 6000 "$LIC/LGPL-2.1" >"$TMP/root/lic/val.txt"
start_coord_admin --data-root "$TMP/root"
ALICE=$(adduser alice member)
BOB=$(adduser bob member)
VIC=$(adduser vic viewer)
jq -n --arg data "$TMP/root/lic" '{name: "gpt-gen", model: {gpt: {layers: 1, heads: 2, embd: 16, block_size: 16}},
      dataset: {format: "text", path: $data, train_subset: 64, test_subset: 16}, batch_size: 8, epochs: 1,
      seed: 2, device: "cpu", log_every: 0, optimizer: {kind: "adamw", lr: 0.003},
      eval_sample: "The GNU General ", eval_sample_tokens: 12}' >"$TMP/gpt.json"
ok 201 "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/gpt.json"
id=$(jq -r .id "$TMP/body")
cli wait "$id" --timeout 300 >/dev/null || { cat "$STATE/jobs/$id/log"; fail "GPT job $id did not succeed"; }
P=/api/v1/jobs/$id/generate

ok 200 "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": "The GNU General ", "max_tokens": 12, "temperature": 0}'
cp "$TMP/body" "$TMP/a.json"
jq -e '(.text | type == "string") and .tokens == 12 and .prompt_tokens == 16 and .prompt_truncated == false and
       .tokens_per_s > 0 and .kv_cache == true' "$TMP/a.json" >/dev/null ||
    { cat "$TMP/a.json"; fail "the JSON answer lacks its fields"; }
ok 200 "$PACER_TOKEN" POST "$P" -H "$JSON" -d '{"prompt": "The GNU General ", "max_tokens": 12, "temperature": 0}'
[ "$(jq -r .text "$TMP/body")" = "$(jq -r .text "$TMP/a.json")" ] || fail "greedy answers differ: $(cat "$TMP/body")"
printf 'The GNU General ' | "$GEN" --spec "$STATE/jobs/$id/spec.json" --checkpoint-dir "$STATE/jobs/$id/checkpoints" \
    --max-tokens 12 --temperature 0 | tail -1 >"$TMP/direct.json"
[ "$(jq -r .text "$TMP/direct.json")" = "$(jq -r .text "$TMP/a.json")" ] || fail "the endpoint and pacer-generate differ"
echo "ok: greedy generation as JSON, the same twice and as pacer-generate's: $(jq -c .text "$TMP/a.json")"
# at bf16 products (the job trained in fp32): the answer says so, and pacer-generate's agrees
ok 200 "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": "The GNU General ", "max_tokens": 12, "temperature": 0, "precision": "bf16"}'
jq -e '.precision == "bf16" and (.kernels.gemm | endswith("-bf16"))' "$TMP/body" >/dev/null ||
    fail "precision bf16: $(jq -c '{precision, kernels}' "$TMP/body")"
cp "$TMP/body" "$TMP/b16.json"
printf 'The GNU General ' | "$GEN" --spec "$STATE/jobs/$id/spec.json" --checkpoint-dir "$STATE/jobs/$id/checkpoints" \
    --max-tokens 12 --temperature 0 --precision bf16 | tail -1 >"$TMP/direct16.json"
[ "$(jq -r .text "$TMP/direct16.json")" = "$(jq -r .text "$TMP/b16.json")" ] || fail "bf16: the endpoint and pacer-generate differ"
[ "$(jq -r .precision "$TMP/a.json")" = fp32 ] || fail "the job's own precision is fp32, the answer says $(jq -r .precision "$TMP/a.json")"
echo "ok: generation at bf16 through the API: $(jq -c '{text, kernels}' "$TMP/b16.json")"
# eval_sample: the epoch's evaluation continued the same prompt with the same (final) weights
ok 200 "$ALICE" GET "/api/v1/jobs/$id/history"
[ "$(jq -r '.accuracy[0].eval_sample' "$TMP/body")" = "$(jq -r .text "$TMP/a.json")" ] ||
    fail "the history's eval_sample $(jq -c '.accuracy[0].eval_sample' "$TMP/body") is not the greedy answer"
echo "ok: the history's evaluation carries the eval_sample text, the greedy answer of its weights"

# seeded sampling repeats; the window of 16 cuts a prompt of 40
body='{"prompt": "This License applies to any program or other work ", "max_tokens": 8, "temperature": 0.9, "top_k": 20, "seed": 7}'
ok 200 "$ALICE" POST "$P" -H "$JSON" -d "$body"
cp "$TMP/body" "$TMP/s1.json"
ok 200 "$ALICE" POST "$P" -H "$JSON" -d "$body"
[ "$(jq -r .text "$TMP/body")" = "$(jq -r .text "$TMP/s1.json")" ] || fail "one seed, two answers"
jq -e '.prompt_truncated == true and .prompt_tokens == 16' "$TMP/body" >/dev/null || fail "no cut said: $(cat "$TMP/body")"
echo "ok: a seed repeats its sample; a long prompt is cut to the window and says so"

# server-sent events: a token frame per token, then done
curl -sN -X POST -H "Authorization: Bearer $ALICE" -H "$JSON" -H "Accept: text/event-stream" \
    -d '{"prompt": "The GNU General ", "max_tokens": 12, "temperature": 0}' "$BASE$P" >"$TMP/sse.txt"
[ "$(grep -c '^event: token' "$TMP/sse.txt")" = 12 ] || { cat "$TMP/sse.txt"; fail "12 token frames expected"; }
grep '^data: ' "$TMP/sse.txt" | tail -1 | sed 's/^data: //' >"$TMP/done.json"
grep -q '^event: done' "$TMP/sse.txt" && [ "$(jq -r .text "$TMP/done.json")" = "$(jq -r .text "$TMP/a.json")" ] ||
    { cat "$TMP/sse.txt"; fail "the stream's done frame is not the JSON answer"; }
streamed=$(grep '^event: token' -A1 "$TMP/sse.txt" | grep '^data: ' | sed 's/^data: //' | jq -rj .text)
[ "$streamed" = "$(jq -r .text "$TMP/a.json")" ] || fail "the token frames' texts do not make the answer"
echo "ok: server-sent events, one frame per token and the summary"

# the CLI, as the owner
PACER_URL=$BASE PACER_TOKEN=$ALICE "$BUILD/pacer" generate "$id" "The GNU General " --max-tokens 12 --temperature 0 \
    >"$TMP/cli.out" 2>"$TMP/cli.err" || fail "pacer generate: $(cat "$TMP/cli.err")"
grep -qF "$(jq -r .text "$TMP/a.json" | head -1)" "$TMP/cli.out" || fail "pacer generate printed $(cat "$TMP/cli.out")"
echo "ok: pacer generate prints the text"

# refusals, each naming what is wrong
refused 400 "max_tokens: must be an integer from 1 to 1024" "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": "a", "max_tokens": 1025}'
refused 400 "temperature: must be a number from 0 (greedy) to 100" "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": "a", "temperature": -1}'
refused 400 "top_k: must be an integer from 0 to 1048576" "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": "a", "top_k": "x"}'
refused 400 "seed: must be an integer from 0 to 9223372036854775807" "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": "a", "seed": -1}'
refused 400 "prompt: missing (the text to continue)" "$ALICE" POST "$P" -H "$JSON" -d '{"max_tokens": 3}'
refused 400 "prompt: must be a string of 1 to 32768 bytes without NUL" "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": ""}'
refused 400 "tokens: unknown field (prompt, max_tokens, temperature, top_k, seed, checkpoint, precision)" "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": "a", "tokens": 3}'
refused 400 'checkpoint: must be "latest", "best" or a checkpoint'"'"'s file name' "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": "a", "checkpoint": "../x"}'
refused 400 "checkpoint: nope.ckpt is not one of the job's checkpoints" "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": "a", "checkpoint": "nope.ckpt"}'
ok 404 "$ALICE" POST /api/v1/jobs/j-999999/generate -H "$JSON" -d '{"prompt": "a"}'
ok 403 "$BOB" POST "$P" -H "$JSON" -d '{"prompt": "a"}'
refused 403 "viewers may only read: to generate text from jobs takes the member or admin role (this coordinator lets only a job's owner and admins generate; pacer-coordinator --viewers-generate lets every user)" "$VIC" POST "$P" -H "$JSON" -d '{"prompt": "a"}'
echo "ok: bad fields 400 by name, an unknown job 404, another member and a viewer 403"

# the dashboard: the job page's Generate card streams the same greedy answer
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ] && command -v node >/dev/null && command -v npm >/dev/null &&
    { [ -d tests/browser/node_modules/playwright-core ] ||
        (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error) >"$TMP/npm.log" 2>&1; }; then
    CHROMIUM=$CHROMIUM timeout 120 node tests/browser/generate.mjs "$BASE" "$ALICE" "$id" "The GNU General " \
        "$(jq -r .text "$TMP/a.json")" "$BUILD/generate.png" "$(jq -r .text "$TMP/a.json")" || fail "the job page's Generate card (screenshot: $BUILD/generate.png)"
else
    echo "not checked: the dashboard's Generate card (no chromium, node or playwright-core)"
fi

# a job whose checkpoints are gone has nothing to generate from: 409, said
rm -f "$STATE/jobs/$id/checkpoints/"*.ckpt
refused 409 "checkpoint: the job has no checkpoint yet" "$ALICE" POST "$P" -H "$JSON" -d '{"prompt": "a"}'
echo "ok: a job without a checkpoint answers 409, saying so"
stop_coord
