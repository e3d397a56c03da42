# A language model described in its own words: a built-in GPT on a text data set (the GNU
# licenses of Debian's base-files, bytes as tokens, eval_sample set) runs through the
# coordinator, then `pacer get` must name its vocabulary and tokenizer, its windows of
# block_size tokens, next-token accuracy, the test loss's perplexity and tokens per second,
# and never classes or samples; the worker's own lines (epoch ends, the final line, the
# progress lines) say the same; the summary's dataset object carries the vocabulary, the
# tokenizer and the window counts. With Chromium and node (tests/browser/lm.mjs): the job
# page and the compare view in those words, the data set named by its path, never
# "fashion-mnist"; and (tests/browser/netchange.mjs) the job page comes through a network
# change that fails its script's, the job's and the nodes' first requests. (The
# Prometheus help texts: tests/unit/test_record_fields.c.)
. tests/integration/coordinator_lib.inc
PACER=$BUILD/pacer
[ -x "$PACER" ] || skip "$PACER not built: libcurl missing (make deps installs libcurl4-openssl-dev)"
LIC=/usr/share/common-licenses
[ -r "$LIC/GPL-3" ] && [ -r "$LIC/LGPL-2.1" ] || skip "$LIC (Debian's base-files) is not here"
mkdir -p "$TMP/root/lic"
cp "$LIC/GPL-3" "$TMP/root/lic/train.txt"
cp "$LIC/LGPL-2.1" "$TMP/root/lic/val.txt"
start_coord --data-root "$TMP/root"
BASE=$(api_base)
# gpt FILE NAME SEED WORKERS - a GPT of windows of 16 tokens, 2 epochs of 128 windows, log
# lines on; on 2 workers ssgd (its ranks measure the gradient noise scale, in windows)
gpt() {
    jq -n --arg data "$TMP/root/lic" --arg name "$2" --argjson seed "$3" --argjson workers "$4" \
        '{name: $name, model: {gpt: {layers: 1, heads: 2, embd: 16, block_size: 16}}, workers: $workers,
          algorithm: {name: (if $workers > 1 then "ssgd" else "sgd" end)},
          dataset: {format: "text", path: $data, train_subset: 128, test_subset: 32}, batch_size: 8, epochs: 2,
          seed: $seed, device: "cpu", log_every: 4, eval_sample: "The ", eval_sample_tokens: 8,
          optimizer: {kind: "adamw", lr: 0.003}}' >"$1"
}
gpt "$TMP/a.json" lm-a 2 2
gpt "$TMP/b.json" lm-b 3 1
A=$(submit "$TMP/a.json")
B=$(submit "$TMP/b.json")
cli wait "$A" --timeout 300 >/dev/null || { cat "$STATE/jobs/$A/log"; fail "GPT job $A did not succeed"; }
cli wait "$B" --timeout 300 >/dev/null || { cat "$STATE/jobs/$B/log"; fail "GPT job $B did not succeed"; }

# the summary's dataset object: a vocabulary, its tokenizer, windows
jq -e '.summary.dataset | .vocab_size == 256 and .tokenizer == "bytes" and .block_size == 16 and
       .train_windows == 128 and .test_windows == 32' "$STATE/jobs/$A/summary.json" >/dev/null 2>&1 ||
    curl -s "$BASE/api/v1/jobs/$A" | jq -e '.summary.dataset | .vocab_size == 256 and .tokenizer == "bytes" and
       .block_size == 16 and .train_windows == 128 and .test_windows == 32' >/dev/null ||
    fail "summary.dataset: $(curl -s "$BASE/api/v1/jobs/$A" | jq -c .summary.dataset)"
echo "ok: the summary's dataset names the vocabulary, the tokenizer and the windows"

"$PACER" --url "$BASE" get "$A" >"$TMP/get.txt" 2>&1 || { cat "$TMP/get.txt"; fail "pacer get $A failed"; }
cat "$TMP/get.txt"
grep -q "^dataset  *vocabulary 256 (bytes), windows of 16 tokens, 128 train / 32 test windows$" "$TMP/get.txt" ||
    fail "pacer get: the dataset line does not name the vocabulary and the windows"
grep -Eq "^result  *next-token accuracy 0\.[0-9]{4}, test loss [0-9.]+ \(perplexity [0-9.]+\), train loss [0-9.]+; 16 steps, [0-9.]+ s, ([0-9]+|-) tokens/s$" \
    "$TMP/get.txt" || fail "pacer get: the result line is not a language model's"
grep -q "^data  *$TMP/root/lic (text), 2 epochs" "$TMP/get.txt" || fail "pacer get: the data line does not name the text"
grep -Eq "step 16 .*next-token accuracy" "$TMP/get.txt" || fail "pacer get: the checkpoint's accuracy is not named the next token's"
grep -Ein "classes|samples|fashion-mnist" "$TMP/get.txt" && fail "pacer get describes the language model in an image classifier's words"
ppl=$(sed -n 's/.*(perplexity \([0-9.]*\)).*/\1/p' "$TMP/get.txt")
loss=$(sed -n 's/.*test loss \([0-9.]*\) (perplexity.*/\1/p' "$TMP/get.txt")
python3 -c "import math,sys; l,p=float(sys.argv[1]),float(sys.argv[2]); sys.exit(abs(math.exp(l)-p) > 0.01*p)" "$loss" "$ppl" ||
    fail "pacer get: perplexity $ppl is not exp($loss)"
echo "ok: pacer get names the vocabulary, the windows, next-token accuracy, perplexity and tokens/s"

# the worker's own lines, in the job's log
LOG=$STATE/jobs/$A/log
grep -Eq "^epoch 2/2 done: train_loss_running [0-9.]+ test_loss [0-9.]+ test_perplexity [0-9.]+ next_token_accuracy 0\.[0-9]{4}$" "$LOG" ||
    { cat "$LOG"; fail "the worker's epoch line is not a language model's"; }
grep -Eq "^final next_token_accuracy 0\.[0-9]{4} test_loss [0-9.]+ test_perplexity [0-9.]+ train_loss [0-9.]+ \([0-9.]+ s, ([0-9]+|-) tokens/s\)$" "$LOG" ||
    { cat "$LOG"; fail "the worker's final line is not a language model's"; }
grep -Eq "^epoch 1/2 step 4/8 loss [0-9.]+ lr [0-9.]+ tokens/s [0-9]+$" "$LOG" || { cat "$LOG"; fail "the progress line is not in tokens/s"; }
grep -n "samples/s\|test_accuracy" "$LOG" && fail "the worker's lines speak of samples/s or test_accuracy for a language model"
echo "ok: the worker's lines speak of tokens/s, perplexity and next-token accuracy"

# the page and the compare view, in a real browser where there is one
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ] && command -v node >/dev/null && command -v npm >/dev/null; then
    if [ ! -d tests/browser/node_modules/playwright-core ]; then
        (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error) >"$TMP/npm.log" 2>&1 ||
            { cat "$TMP/npm.log"; skip "cannot install playwright-core from npm (offline?)"; }
    fi
    # the Sample card: the newest evaluation's text
    sample=$(curl -s "$BASE/api/v1/jobs/$A/history?points=50" | jq -r '[.accuracy[] | select(.eval_sample)] | last | .eval_sample')
    [ -n "$sample" ] && [ "$sample" != null ] || fail "the history holds no eval_sample text"
    CHROMIUM=$CHROMIUM timeout 120 node tests/browser/lm.mjs "$BASE" "$A" "$B" "$TMP/root/lic" 16 "$sample" "$BUILD/lm.png" ||
        fail "the language model's page (screenshot of the failure: $BUILD/lm-failed.png)"
    # a network change under the page's loads (tests/browser/chromium.mjs, static/app.js api)
    CHROMIUM=$CHROMIUM timeout 60 node tests/browser/netchange.mjs "$BASE" "$B" lm-b ||
        fail "the job page did not come through a network change"
else
    echo "skip: the browser part (no chromium at $CHROMIUM, or no node/npm)"
fi
stop_coord
