# A language model end to end: the built-in GPT (2 blocks, 2 heads, width 32, block 32) on
# a text data set of the GNU licenses (Debian's base-files, /usr/share/common-licenses: the
# GPL 3 and the Apache licence to train on, the LGPL 2.1 to validate), trained through
# pacer-worker on 2 ranks (ssgd, AdamW): the job finishes, its loss falls far below a
# uniform guess over the 256 bytes (ln 256 = 5.55 nats per token), and the summary reports
# the language model's figures (test_perplexity = exp(test_loss), next-token accuracy,
# train_tokens_per_s = 32 x train_samples_per_s). A GPT job stopped after 10 steps and
# resumed from its checkpoint ends bit for bit where the uninterrupted one does. Then bad
# data stops the job before training with the file named: a token file with an id past
# dataset.vocab_size, one whose llm.c header says more tokens than it holds, and a GPT on
# an image data set.
. tests/lib.sh
LIC=/usr/share/common-licenses
[ -r "$LIC/GPL-3" ] && [ -r "$LIC/Apache-2.0" ] && [ -r "$LIC/LGPL-2.1" ] || skip "$LIC (Debian's base-files) is not here"
mkdir -p "$TMP/text"
cat "$LIC/GPL-3" "$LIC/Apache-2.0" >"$TMP/text/train.txt"
cp "$LIC/LGPL-2.1" "$TMP/text/val.txt"
jq -n --arg data "$TMP/text" \
    '{name: "gpt-text", model: {gpt: {layers: 2, heads: 2, embd: 32, block_size: 32}},
      dataset: {format: "text", path: $data, train_subset: 768, test_subset: 128},
      algorithm: {name: "ssgd"}, workers: 2, batch_size: 8, epochs: 1, seed: 3, device: "cpu", log_every: 0,
      optimizer: {kind: "adamw", lr: 0.003, weight_decay: 0.1}}' >"$TMP/job.json"
$MPIRUN -np 2 $WORKER --spec "$TMP/job.json" --summary "$TMP/summary.json" >"$TMP/job.log" 2>&1 ||
    { tail -20 "$TMP/job.log"; fail "mpirun -np 2 pacer-worker (gpt on text) failed"; }
S="$TMP/summary.json"
cat "$S" | jq -c '{steps, train_loss, test_loss, test_perplexity, test_accuracy, train_tokens_per_s, train_samples_per_s}'
[ "$(json "$S" .steps)" = 48 ] || fail "48 steps of 16 windows expected (768 windows), got $(json "$S" .steps)"
at_most "test_loss (nats per token; a uniform guess is 5.55)" "$(json "$S" .test_loss)" 4.0
at_most "train_loss" "$(json "$S" .train_loss)" 4.0
jq -e '(.test_perplexity - (.test_loss | exp) | fabs) < 1e-3 * .test_perplexity' "$S" >/dev/null ||
    fail "test_perplexity is not exp(test_loss)"
jq -e '.test_accuracy > 0.1 and .test_accuracy < 1' "$S" >/dev/null || fail "next-token accuracy $(json "$S" .test_accuracy)"
jq -e '.block_size == 32 and .vocab_size == 256 and
       ((.train_tokens_per_s - 32 * .train_samples_per_s) | fabs) < 1e-6 * .train_tokens_per_s' "$S" >/dev/null ||
    fail "train_tokens_per_s is not block_size x train_samples_per_s"
echo "ok: a GPT trains on text through pacer-worker on 2 ranks, test_loss $(json "$S" .test_loss) nats per token"

# a checkpoint of a GPT resumes bit for bit (weights, AdamW's moments, the window order)
ck() { # NAME DIR
    jq -n --arg data "$TMP/text" --arg dir "$2" --arg name "$1" \
        '{name: $name, model: {gpt: {layers: 1, heads: 2, embd: 16, block_size: 16}},
          dataset: {format: "text", path: $data, train_subset: 96, test_subset: 16}, batch_size: 8, epochs: 2,
          seed: 5, device: "cpu", log_every: 0, optimizer: {kind: "adamw", lr: 0.003},
          checkpoint: {every_steps: 4, dir: $dir}}'
}
ck g "$TMP/full" >"$TMP/full.json"
ck g "$TMP/cut" >"$TMP/cut.json"
$WORKER --spec "$TMP/full.json" >"$TMP/full.log" 2>&1 || { cat "$TMP/full.log"; fail "the uninterrupted GPT job failed"; }
$WORKER --spec "$TMP/cut.json" --stop-after-steps 10 >"$TMP/cut1.log" 2>&1 || { cat "$TMP/cut1.log"; fail "the cut GPT job failed"; }
$WORKER --spec "$TMP/cut.json" --resume >"$TMP/cut2.log" 2>&1 || { cat "$TMP/cut2.log"; fail "the resumed GPT job failed"; }
grep -q "resumed from .* at step 8" "$TMP/cut2.log" || { cat "$TMP/cut2.log"; fail "the GPT job did not resume at step 8"; }
cmp "$TMP/full/g.ckpt" "$TMP/cut/g.ckpt" || fail "the GPT stopped at step 10 and resumed differs from the uninterrupted run"
echo "ok: a GPT job stopped and resumed from its checkpoint ends bit for bit where the uninterrupted one does"

# bad token files: refused by name before training (exit 2)
mkdir -p "$TMP/tok"
python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<100H', *([1] * 50 + [300] + [2] * 49)))" >"$TMP/tok/train.bin"
cp "$TMP/tok/train.bin" "$TMP/tok/val.bin"
jq -n --arg data "$TMP/tok" '{model: {gpt: {layers: 1, heads: 1, embd: 8, block_size: 4}},
      dataset: {format: "tokens", path: $data, vocab_size: 256}, batch_size: 2, device: "cpu"}' >"$TMP/tok.json"
expect_error 2 "train.bin: id 300 at token 50 is outside the vocabulary (vocab_size 256)" $WORKER --spec "$TMP/tok.json"
python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<256i', 20240520, 1, 1000, *([0] * 253)) + struct.pack('<10H', *range(10)))" >"$TMP/tok/train.bin"
expect_error 2 "train.bin: header says 1000 tokens, the file holds 20 bytes after it" $WORKER --spec "$TMP/tok.json"
jq -n '{model: {gpt: {layers: 1}}, dataset: {name: "mnist"}}' >"$TMP/img.json"
expect_error 2 "model.gpt: trains on dataset.format text or tokens, not idx" $WORKER --spec "$TMP/img.json"
