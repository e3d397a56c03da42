# pacer's generation against torch: a GPT (2 blocks, 2 heads, width 32, block 16, biases,
# tied head) trained 6 epochs on 300 bytes of the GPL repeated (Debian's base-files) by
# pacer-worker;
# build/pacer-generate continues a 10-byte prompt greedily for 40 tokens (past the window
# of 16, where the window is cropped and recomputed) and tests/tools/generate_torch.py
# decodes greedily with torch in float64 from the checkpoint's weights (gpt_torch.py's
# nanoGPT-style module): every token the same. The answer says the key/value cache ran;
# with --kv-cache off (each token the window recomputed) the tokens are the same and the
# answer says the cache was off. Skips (77) without torch.
. tests/lib.sh
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
[ -x "$BUILD/tools/gpt_tool" ] || fail "$BUILD/tools/gpt_tool is not built"
[ -x "$BUILD/pacer-generate" ] || fail "$BUILD/pacer-generate is not built"
mkdir -p "$TMP/text" "$TMP/names"
# a text it learns in seconds, so that the greedy answer is a varied sentence, not one
# repeated byte: 300 bytes of the licence's prose over and over
for i in $(seq 60); do tail -c +3001 "$TEXT" | head -c 300; done >"$TMP/text/train.txt"
head -c 3000 "$TMP/text/train.txt" >"$TMP/text/val.txt"
jq -n --arg data "$TMP/text" --arg dir "$TMP/ck" \
    '{name: "g", model: {gpt: {layers: 2, heads: 2, embd: 32, block_size: 16}},
      dataset: {format: "text", path: $data, train_subset: 512, test_subset: 32}, batch_size: 16, epochs: 6,
      seed: 3, device: "cpu", log_every: 0, optimizer: {kind: "adamw", lr: 0.01}, checkpoint: {every_steps: 192, dir: $dir}}' >"$TMP/job.json"
$WORKER --spec "$TMP/job.json" >"$TMP/train.log" 2>&1 || { tail -20 "$TMP/train.log"; fail "training the GPT failed"; }
head -c 10 "$TMP/text/train.txt" >"$TMP/prompt.txt"
"$BUILD/pacer-generate" --spec "$TMP/job.json" --checkpoint-dir "$TMP/ck" --max-tokens 40 --temperature 0 \
    <"$TMP/prompt.txt" >"$TMP/pacer.jsonl" || { cat "$TMP/pacer.jsonl"; fail "pacer-generate failed"; }
tail -1 "$TMP/pacer.jsonl" | jq -e '.kv_cache == true' >/dev/null ||
    fail "no kv_cache in the answer: $(tail -1 "$TMP/pacer.jsonl")"
"$BUILD/pacer-generate" --spec "$TMP/job.json" --checkpoint-dir "$TMP/ck" --max-tokens 40 --temperature 0 \
    --kv-cache off <"$TMP/prompt.txt" >"$TMP/nocache.jsonl" || { cat "$TMP/nocache.jsonl"; fail "--kv-cache off failed"; }
tail -1 "$TMP/nocache.jsonl" | jq -e '.kv_cache == false and (.kv_cache_off | test("turned off"))' >/dev/null ||
    fail "--kv-cache off: $(tail -1 "$TMP/nocache.jsonl")"
[ "$(tail -1 "$TMP/nocache.jsonl" | jq -r .text)" = "$(tail -1 "$TMP/pacer.jsonl" | jq -r .text)" ] ||
    fail "the tokens without the cache differ: $(tail -1 "$TMP/nocache.jsonl" | jq -c .text)"
"$BUILD/pacer-generate" --spec "$TMP/job.json" --checkpoint-dir "$TMP/ck" --kv-cache maybe </dev/null >"$TMP/bad.json"
[ $? -eq 2 ] && grep -q "neither on nor off" "$TMP/bad.json" || fail "--kv-cache maybe: $(cat "$TMP/bad.json")"
echo "ok: --kv-cache off (the window recomputed per token) gives the cached answer's tokens"
# the tensor names in layout order: gpt_tool's listing for the same shape
head -c 17 "$TEXT" | /usr/bin/python3 -c "import sys, numpy as np; np.array(list(sys.stdin.buffer.read()), dtype=np.int32).tofile('$TMP/names/ids.i32')"
"$BUILD/tools/gpt_tool" 2 2 32 16 256 1 1 3 "$TMP/names" >/dev/null || fail "gpt_tool failed"
$TORCH_PY tests/tools/generate_torch.py "$TMP/ck/g.ckpt" "$TMP/names/names.txt" 2 2 32 16 "$TMP/prompt.txt" \
    "$TMP/pacer.jsonl" >"$TMP/torch.log" 2>&1
rc=$?
cat "$TMP/torch.log"
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/torch.log")"
[ $rc -eq 0 ] || fail "pacer's greedy generation differs from torch's from the same weights (above)"
echo "ok: pacer's greedy generation is torch's token for token: $(tail -1 "$TMP/pacer.jsonl" | jq -c .text)"
