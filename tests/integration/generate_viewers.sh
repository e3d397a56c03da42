# The admin's choice of who may generate (pacer-coordinator --viewers-generate): with it, a
# viewer and a member who does not own the job get a member's GPT job's text (a "tokens" data
# set that `pacer tokenize --tokenizer chars` wrote, its tokenizer used) (200, the same
# seeded sample as the owner's), as JSON and streamed, and GET /api/v1/whoami says so, so
# the job page shows a viewer the Generate card (headless Chromium, where it is); anonymous
# callers still need a token.
# Without it (the default) both are 403 naming the rule and the option: generate_endpoint.
. tests/integration/coordinator_lib.inc
need_api_tools
[ -x "$BUILD/pacer" ] || skip "$BUILD/pacer not built (libcurl missing?)"
LIC=/usr/share/common-licenses
[ -r "$LIC/GPL-3" ] || skip "$LIC (Debian's base-files) is not here"
mkdir -p "$TMP/root/lic"
head -c 20000 "$LIC/GPL-3" >"$TMP/root/lic/train.txt"
tail -c 4000 "$LIC/GPL-3" >"$TMP/root/lic/val.txt"
start_coord_admin --data-root "$TMP/root" --viewers-generate
ALICE=$(adduser alice member)
BOB=$(adduser bob member)
VIC=$(adduser vic viewer)
# a token data set of the text's characters (pacer tokenize), whose tokenizer generation uses
"$BUILD/pacer" tokenize "$TMP/root/lic" --tokenizer chars >"$TMP/tok.log" 2>&1 || fail "tokenize: $(cat "$TMP/tok.log")"
V=$(sed -n 's/.*tokens.tokenizer: chars, vocabulary \([0-9]*\)$/\1/p' "$TMP/tok.log")
[ -n "$V" ] || fail "no vocabulary line: $(cat "$TMP/tok.log")"
jq -n --arg data "$TMP/root/lic" --argjson v "$V" '{name: "gpt-view", model: {gpt: {layers: 1, heads: 1, embd: 16, block_size: 16}},
      dataset: {format: "tokens", path: $data, vocab_size: $v, train_subset: 16, test_subset: 8}, batch_size: 8, epochs: 1,
      seed: 2, device: "cpu", log_every: 0, checkpoint: {every_steps: 2}}' >"$TMP/gpt.json"
ok 201 "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/gpt.json"
id=$(jq -r .id "$TMP/body")
cli wait "$id" --timeout 300 >/dev/null || { cat "$STATE/jobs/$id/log"; fail "GPT job $id did not succeed"; }
P=/api/v1/jobs/$id/generate
body='{"prompt": "GNU ", "max_tokens": 6, "temperature": 1, "seed": 5}'
ok 200 "$ALICE" POST "$P" -H "$JSON" -d "$body"
owner_text=$(jq -r .text "$TMP/body")
jq -e '.prompt_tokens == 4' "$TMP/body" >/dev/null || fail "the prompt was not read as 4 characters: $(cat "$TMP/body")"
ok 200 "$VIC" POST "$P" -H "$JSON" -d "$body"
[ "$(jq -r .text "$TMP/body")" = "$owner_text" ] || fail "the viewer's text differs from the owner's: $(cat "$TMP/body")"
ok 200 "$BOB" POST "$P" -H "$JSON" -d "$body"
[ "$(jq -r .text "$TMP/body")" = "$owner_text" ] || fail "another member's text differs from the owner's"
curl -sN -X POST -H "Authorization: Bearer $VIC" -H "$JSON" -H "Accept: text/event-stream" -d "$body" "$BASE$P" \
    >"$TMP/sse.txt"
[ "$(grep -c '^event: token' "$TMP/sse.txt")" = 6 ] && grep -q '^event: done' "$TMP/sse.txt" ||
    { cat "$TMP/sse.txt"; fail "the viewer's stream is not 6 token frames and done"; }
got=$(curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H "$JSON" -d "$body" "$BASE$P")
[ "$got" = 401 ] || fail "an anonymous caller got HTTP $got, not 401"
# the viewer may generate, not change: retry and cancel stay the owner's
ok 403 "$VIC" POST "/api/v1/jobs/$id/retry"
ok 200 "$VIC" GET /api/v1/whoami
jq -e '.role == "viewer" and .viewers_generate == true' "$TMP/body" >/dev/null || fail "whoami: $(cat "$TMP/body")"
# the dashboard shows the viewer the job page's Generate card, which streams the answer
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ] && command -v node >/dev/null && [ -d tests/browser/node_modules/playwright-core ]; then
    ok 200 "$VIC" POST "$P" -H "$JSON" -d '{"prompt": "GNU ", "max_tokens": 12, "temperature": 0}'
    CHROMIUM=$CHROMIUM timeout 120 node tests/browser/generate.mjs "$BASE" "$VIC" "$id" "GNU " \
        "$(jq -r .text "$TMP/body")" "$BUILD/generate_viewer.png" ||
        fail "a viewer's Generate card (screenshot: $BUILD/generate_viewer.png)"
else
    echo "not checked: the viewer's Generate card (no chromium, node or playwright-core in tests/browser)"
fi
echo "ok: under --viewers-generate a viewer and another member generate the owner's text; anonymous 401"
