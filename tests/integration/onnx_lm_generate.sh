# The exported ONNX of the built-in GPT generates in onnxruntime: a GPT (2 blocks, 2 heads,
# width 32, block 16, bytes) trained 6 epochs on 300 bytes of the GPL repeated, exported by
# pacer-worker --export-onnx (int64 ids (N, 16) in, logits (N, 16, 256) out: Gather, the
# blocks, the causal softmax as Mul, Add of a -inf mask and Softmax, the head tied to the
# embedding's one initializer). tests/onnxrt/lm_greedy.mjs decodes a 10-byte prompt greedily
# for 40 tokens with onnxruntime-node (the window re-fed whole each token, no cache, cropped
# to the last 16 ids past the window) and gets pacer-generate's greedy tokens from the
# checkpoint of the same weights, token for token. Skips (77) without node and
# tests/onnxrt's onnxruntime-node.
. tests/lib.sh
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
[ -x "$BUILD/pacer-generate" ] || fail "$BUILD/pacer-generate is not built"
command -v node >/dev/null || skip "node is not installed"
[ -d tests/onnxrt/node_modules/onnxruntime-node ] || skip "tests/onnxrt has no onnxruntime-node (make deps installs it)"
mkdir -p "$TMP/text"
for i in $(seq 60); do tail -c +3001 "$TEXT" | head -c 300; done >"$TMP/text/train.txt"
head -c 1000 "$TMP/text/train.txt" >"$TMP/text/val.txt"
jq -n --arg data "$TMP/text" --arg dir "$TMP/ck" \
    '{name: "g", model: {gpt: {layers: 2, heads: 2, embd: 32, block_size: 16}},
      dataset: {format: "text", path: $data, train_subset: 1024, test_subset: 16}, batch_size: 16, epochs: 6,
      seed: 3, device: "cpu", log_every: 0, optimizer: {kind: "adamw", lr: 0.005}, checkpoint: {every_steps: 384, dir: $dir}}' >"$TMP/job.json"
$WORKER --spec "$TMP/job.json" --export-onnx "$TMP/g.onnx" >"$TMP/train.log" 2>&1 ||
    { tail -20 "$TMP/train.log"; fail "training or exporting the GPT failed"; }
head -c 10 "$TMP/text/train.txt" >"$TMP/prompt.txt"
"$BUILD/pacer-generate" --spec "$TMP/job.json" --checkpoint-dir "$TMP/ck" --max-tokens 40 --temperature 0 \
    <"$TMP/prompt.txt" >"$TMP/pacer.jsonl" || { cat "$TMP/pacer.jsonl"; fail "pacer-generate failed"; }
want=$(jq -c 'select(.token != null) | .token' "$TMP/pacer.jsonl" | jq -sc .)
ids=$(od -An -tu1 "$TMP/prompt.txt" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
got=$(node tests/onnxrt/lm_greedy.mjs "$TMP/g.onnx" 16 "$ids" 40) || fail "onnxruntime could not run $TMP/g.onnx"
[ "$(echo "$want" | jq length)" = 40 ] || fail "pacer-generate gave $(echo "$want" | jq length) tokens, want 40"
[ "$got" = "$want" ] || fail "onnxruntime's greedy tokens $got differ from pacer-generate's $want"
# pacer imports its own export again: the same parameters (the tied table counted once)
"$WORKER" --check-onnx "$TMP/g.onnx" >"$TMP/check.json" 2>"$TMP/check.err" ||
    { cat "$TMP/check.err"; fail "pacer-worker --check-onnx refused the exported GPT"; }
# 2 blocks of 12704 (layer norms, attention, MLP with biases), ln_f 64, wte 256 x 32, wpe 16 x 32
[ "$(json "$TMP/check.json" .parameters)" = 34176 ] ||
    fail "the exported GPT imports with $(json "$TMP/check.json" .parameters) parameters, want 34176 (the head tied)"
echo "ok: pacer imports the exported GPT again: 34176 parameters, the head tied to the one table"
echo "ok: onnxruntime decodes the exported GPT greedily to pacer-generate's 40 tokens: $(tail -1 "$TMP/pacer.jsonl" | jq -c .text)"

# the other head and no biases: 1 block, "bias": false, "tie_embeddings": false (lm_head.weight
# an initializer of its own, the linear layers a MatMul each)
jq '.name = "u" | .model.gpt.layers = 1 | .model.gpt.bias = false | .model.gpt.tie_embeddings = false |
    .epochs = 3 | .optimizer.lr = 0.01 | .checkpoint.every_steps = 192' "$TMP/job.json" >"$TMP/untied.json"
$WORKER --spec "$TMP/untied.json" --export-onnx "$TMP/u.onnx" >"$TMP/untied.log" 2>&1 ||
    { tail -20 "$TMP/untied.log"; fail "training or exporting the untied GPT failed"; }
"$BUILD/pacer-generate" --spec "$TMP/untied.json" --checkpoint-dir "$TMP/ck" --max-tokens 40 --temperature 0 \
    <"$TMP/prompt.txt" >"$TMP/untied.jsonl" || { cat "$TMP/untied.jsonl"; fail "pacer-generate (untied) failed"; }
want=$(jq -c 'select(.token != null) | .token' "$TMP/untied.jsonl" | jq -sc .)
got=$(node tests/onnxrt/lm_greedy.mjs "$TMP/u.onnx" 16 "$ids" 40) || fail "onnxruntime could not run $TMP/u.onnx"
[ "$got" = "$want" ] || fail "untied: onnxruntime's greedy tokens $got differ from pacer-generate's $want"
echo "ok: untied and without biases, the same: $(tail -1 "$TMP/untied.jsonl" | jq -c .text)"
