# eval_sample: a GPT (1 block, 2 heads, width 32, block 16, chars tokenizer) trained 2
# epochs on 300 bytes of the GPL repeated; at each epoch end rank 0 continues a 10-byte
# prompt greedily for 20 tokens (past the window of 16: the crop) and the text goes with
# the epoch's metrics record. Each epoch's text is pacer-generate's greedy answer from that
# epoch's checkpoint, character for character, and 20 characters long (one token each).
# The same for an imported language model: that GPT exported by pacer-worker --export-onnx
# and trained an epoch as "model": {"onnx": PATH} with the same prompt.
# Refused by name: eval_sample on an image model, too long, a control byte,
# eval_sample_tokens out of range, and a prompt the chars tokenizer has no ids for.
. tests/lib.sh
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
[ -x "$BUILD/pacer-generate" ] || fail "$BUILD/pacer-generate is not built"
mkdir -p "$TMP/text"
for i in $(seq 60); do tail -c +3001 "$TEXT" | head -c 300; done >"$TMP/text/train.txt"
head -c 1000 "$TMP/text/train.txt" >"$TMP/text/val.txt"
PROMPT=$(head -c 10 "$TMP/text/train.txt")
spec() { # PROMPT(JSON) TOKENS
    jq -n --arg data "$TMP/text" --arg dir "$TMP/ck" --argjson p "$1" --argjson n "$2" \
        '{name: "s", model: {gpt: {layers: 1, heads: 2, embd: 32, block_size: 16}},
          dataset: {format: "text", path: $data, tokenizer: "chars", train_subset: 1024, test_subset: 16},
          batch_size: 16, epochs: 2, seed: 5, device: "cpu", log_every: 0, optimizer: {kind: "adamw", lr: 0.01},
          checkpoint: {every_steps: 64, keep_last: 2, dir: $dir}, eval_sample: $p, eval_sample_tokens: $n}'
}
spec "$(jq -n --arg p "$PROMPT" '$p')" 20 >"$TMP/job.json"
$WORKER --spec "$TMP/job.json" --metrics "$TMP/m.jsonl" >"$TMP/train.log" 2>&1 ||
    { tail -20 "$TMP/train.log"; fail "training the GPT with eval_sample failed"; }
jq -c 'select(.kind == "epoch" and .rank == 0) | {epoch, step, eval_sample}' "$TMP/m.jsonl" >"$TMP/samples.jsonl"
[ "$(wc -l <"$TMP/samples.jsonl")" = 2 ] || { cat "$TMP/samples.jsonl"; fail "want 2 epoch records of rank 0"; }
[ "$(jq -c 'select(.kind == "step" and has("eval_sample"))' "$TMP/m.jsonl" | wc -l)" = 0 ] ||
    fail "a step record carries an eval_sample"
# same_as_generate WHAT REC SPEC CKDIR JOB: the record's eval_sample is 20 characters and
# what pacer-generate answers greedily from JOB's checkpoint of the record's step
same_as_generate() {
    got=$(echo "$2" | jq -r .eval_sample)
    [ "$(echo "$2" | jq '.eval_sample | length')" = 20 ] || fail "$1: the sample is not 20 characters: $2"
    ck=$(cd "$4" && ls | grep "^$5\.step$(echo "$2" | jq .step)-" | head -1)
    [ -n "$ck" ] || fail "$1: no checkpoint of step $(echo "$2" | jq .step) in $(ls "$4")"
    printf '%s' "$PROMPT" | "$BUILD/pacer-generate" --spec "$3" --checkpoint-dir "$4" --checkpoint "$ck" \
        --max-tokens 20 --temperature 0 >"$TMP/gen.jsonl" || { cat "$TMP/gen.jsonl"; fail "$1: pacer-generate from $ck failed"; }
    want=$(tail -1 "$TMP/gen.jsonl" | jq -r .text)
    [ "$got" = "$want" ] || fail "$1: eval_sample '$got', pacer-generate from $ck '$want'"
    tail -1 "$TMP/gen.jsonl" | jq -e '.kv_cache == true' >/dev/null || fail "$1: generated without the cache"
    echo "ok: $1's sample is pacer-generate's greedy answer from $ck: $(echo "$2" | jq -c .eval_sample)"
}
while read -r rec; do
    same_as_generate "epoch $(echo "$rec" | jq .epoch)" "$rec" "$TMP/job.json" "$TMP/ck" s
done <"$TMP/samples.jsonl"
[ "$(sed -n 1p "$TMP/samples.jsonl" | jq -r .eval_sample)" != "$(sed -n 2p "$TMP/samples.jsonl" | jq -r .eval_sample)" ] ||
    echo "note: both epochs wrote the same text"

# an imported language model: the GPT's graph as ONNX, trained one epoch more from its
# initializers, samples what pacer-generate answers from its checkpoint
jq '.epochs = 1 | del(.checkpoint)' "$TMP/job.json" >"$TMP/export.json"
$WORKER --spec "$TMP/export.json" --export-onnx "$TMP/g.onnx" >"$TMP/export.log" 2>&1 ||
    { tail -5 "$TMP/export.log"; fail "exporting the GPT failed"; }
jq --arg m "$TMP/g.onnx" --arg dir "$TMP/ick" '.name = "i" | .model = {onnx: $m} | .epochs = 1 |
    .checkpoint = {every_steps: 64, keep_last: 1, dir: $dir}' "$TMP/job.json" >"$TMP/imported.json"
$WORKER --spec "$TMP/imported.json" --metrics "$TMP/im.jsonl" >"$TMP/itrain.log" 2>&1 ||
    { tail -20 "$TMP/itrain.log"; fail "training the imported GPT with eval_sample failed"; }
rec=$(jq -c 'select(.kind == "epoch" and .rank == 0)' "$TMP/im.jsonl" | tail -1)
same_as_generate "the imported GPT" "$rec" "$TMP/imported.json" "$TMP/ick" i

refused() { # WHAT PATTERN SPEC_FILE - pacer-worker refuses the spec with PATTERN on stderr
    $WORKER --spec "$3" >"$TMP/bad.log" 2>&1 && fail "$1: accepted"
    grep -q "$2" "$TMP/bad.log" || { tail -5 "$TMP/bad.log"; fail "$1: refused without naming '$2'"; }
    echo "ok: $1 refused: $(grep -m1 "$2" "$TMP/bad.log")"
}
jq '.model = "mlp" | .dataset = {name: "fashion-mnist"}' "$TMP/job.json" >"$TMP/bad.json"
refused "eval_sample on an image model" "eval_sample: only for a language model" "$TMP/bad.json"
spec "\"$(head -c 300 /dev/zero | tr '\0' a)\"" 20 >"$TMP/bad.json"
refused "a 300-byte eval_sample" "eval_sample: too long" "$TMP/bad.json"
spec '"a\u0007b"' 20 >"$TMP/bad.json"
refused "a control byte in eval_sample" "eval_sample: must be text" "$TMP/bad.json"
spec '"the"' 0 >"$TMP/bad.json"
refused "eval_sample_tokens 0" "eval_sample_tokens" "$TMP/bad.json"
spec '"\u00fcber \u263a"' 20 >"$TMP/bad.json"
refused "a prompt outside the chars vocabulary" "eval_sample: " "$TMP/bad.json"
