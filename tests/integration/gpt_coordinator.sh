# A language model through the job service: a GPT job on a text data set under a data root
# is submitted with `pacer submit`, checked at submission (the text's splits probed, the
# memory estimate counted from the GPT's fields), runs and SUCCEEDS with the language
# model's summary; a job on a token data set whose validation split is missing FAILS with
# the split named in its log; a BPE tokenizer file outside the data roots is refused (400).
. tests/integration/coordinator_lib.inc
LIC=/usr/share/common-licenses
[ -r "$LIC/GPL-3" ] && [ -r "$LIC/LGPL-2.1" ] || skip "$LIC (Debian's base-files) is not here"
mkdir -p "$TMP/root/lic" "$TMP/root/tok"
cp "$LIC/GPL-3" "$TMP/root/lic/train.txt"
cp "$LIC/LGPL-2.1" "$TMP/root/lic/val.txt"
start_coord --data-root "$TMP/root"
# a BPE tokenizer's files are read by the workers like the data set: under a data root only
BASE=$(api_base)
jq -n --arg data "$TMP/root/lic" '{model: {gpt: {layers: 1}},
      dataset: {format: "text", path: $data, tokenizer: {kind: "bpe", vocab: "/etc/passwd", merges: "/etc/passwd"}}}' \
    >"$TMP/pw.json"
code=$(curl -s -o "$TMP/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$TMP/pw.json" \
    "$BASE/api/v1/jobs")
[ "$code" = 400 ] || { cat "$TMP/body"; fail "a tokenizer vocab of /etc/passwd: HTTP $code, want 400"; }
jq -r .detail "$TMP/body" | grep -q "^dataset.tokenizer.vocab: /etc/passwd is not under a data root" ||
    { cat "$TMP/body"; fail "the refusal does not name dataset.tokenizer.vocab"; }
grep -q 'root:x' "$TMP/body" && fail "the refusal quotes /etc/passwd"
echo "ok: a tokenizer file outside the data roots is refused (400, dataset.tokenizer.vocab)"
jq -n --arg data "$TMP/root/lic" '{name: "gpt-lic", model: {gpt: {layers: 1, heads: 2, embd: 16, block_size: 16}},
      dataset: {format: "text", path: $data, train_subset: 128, test_subset: 32}, batch_size: 8, epochs: 1,
      seed: 2, device: "cpu", log_every: 0, optimizer: {kind: "adamw", lr: 0.003}}' >"$TMP/gpt.json"
id=$(submit "$TMP/gpt.json")
cli wait "$id" --timeout 300 || { cat "$STATE/jobs/$id/log"; fail "GPT job $id did not succeed"; }
[ "$(field_of "$id" summary.model)" = gpt ] || fail "summary.model $(field_of "$id" summary.model)"
[ "$(field_of "$id" summary.block_size)" = 16 ] || fail "summary.block_size $(field_of "$id" summary.block_size)"
at_most "test_loss (nats per token)" "$(field_of "$id" summary.test_loss)" 5.6
need_number "test_perplexity" "$(field_of "$id" summary.test_perplexity)"
echo "ok: a GPT job on text SUCCEEDED through the coordinator ($(field_of "$id" summary.train_tokens_per_s) tokens/s)"

python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<200H', *([7] * 200)))" >"$TMP/root/tok/train.bin"
jq -n --arg data "$TMP/root/tok" '{model: {gpt: {layers: 1}}, dataset: {format: "tokens", path: $data, vocab_size: 64}}' \
    >"$TMP/tok.json"
id2=$(submit "$TMP/tok.json")
cli wait "$id2" --timeout 300 >/dev/null 2>&1 && fail "job $id2 on a token set without val.bin succeeded"
await 60 "job $id2 to fail" is_state "$id2" FAILED
grep -q "neither val.bin nor val_\*.bin" "$STATE/jobs/$id2/log" || { cat "$STATE/jobs/$id2/log"; fail "job $id2's log does not name the missing split"; }
echo "ok: a token set without its validation split fails the job, the split named"
stop_coord
