# init: a job started from another job's weights. A built-in GPT (2 blocks, width 32) trained
# 2 epochs on a text (SGD) writes its weights as safetensors and as checkpoints. A second
# job of the same model on the same data, started from them (init.safetensors, then
# init.checkpoint) at a learning rate of 1e-30 (every update far below its weight's float
# spacing, so the first evaluation is of the starting weights), evaluates to the source's
# last test_loss; without init it does not. A strict mismatch (a model of width 16, a file
# without a tensor of the model, another model's checkpoint) is refused by name; init.strict false loads what matches
# and the summary's init names the rest (missing, unexpected). init.job without a
# coordinator, and two sources at once, are refused by name.
. tests/lib.sh
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
mkdir -p "$TMP/text" "$TMP/ck"
head -c 2000 "$TEXT" >"$TMP/text/train.txt"
head -c 600 "$TEXT" >"$TMP/text/val.txt"
jq -n --arg data "$TMP/text" --arg ck "$TMP/ck" \
    '{name: "src", model: {gpt: {layers: 2, heads: 2, embd: 32, block_size: 16}},
      dataset: {format: "text", path: $data}, algorithm: {name: "ssgd"}, workers: 1, batch_size: 8,
      epochs: 2, seed: 7, device: "cpu", log_every: 0, optimizer: {kind: "sgd", lr: 0.05},
      checkpoint: {every_steps: 1000000, dir: $ck}}' >"$TMP/src.json"
$WORKER --spec "$TMP/src.json" --summary "$TMP/src_summary.json" --export-safetensors "$TMP/src.safetensors" \
    >"$TMP/src.log" 2>&1 || { tail -20 "$TMP/src.log"; fail "the source job failed"; }
src_loss=$(json "$TMP/src_summary.json" .test_loss)
[ -s "$TMP/ck/src.ckpt" ] || { ls "$TMP/ck"; fail "the source job wrote no checkpoint"; }

# the fine-tuning job: the same model and data, its updates vanishing
tune() { # NAME INIT_JSON [jq edit]
    jq --argjson init "$2" ".name = \"$1\" | .seed = 99 | .epochs = 1 | .checkpoint = {every_steps: 0, dir: \"$TMP/ck\"}
        | .optimizer = {kind: \"sgd\", lr: 1e-30, momentum: 0} | (if \$init == null then . else .init = \$init end)
        ${3:+| $3}" "$TMP/src.json" >"$TMP/$1.json"
    $WORKER --spec "$TMP/$1.json" --summary "$TMP/$1_summary.json" >"$TMP/$1.log" 2>&1
}
same_loss() { # SUMMARY: its first (only) evaluation's test_loss is the source's last, to 1e-6
    jq -e --argjson s "$src_loss" '(.test_loss - $s) | fabs <= 1e-6 * $s' "$1" >/dev/null
}
tune st "{\"safetensors\": \"$TMP/src.safetensors\"}" || { tail -5 "$TMP/st.log"; fail "init.safetensors: the job failed"; }
same_loss "$TMP/st_summary.json" ||
    fail "init.safetensors: test_loss $(json "$TMP/st_summary.json" .test_loss), the source's last $src_loss"
[ "$(jq -c '.init | [.loaded, .missing, .unexpected, .mismatched]' "$TMP/st_summary.json")" = '[28,[],[],[]]' ] ||
    fail "init.safetensors: summary init $(jq -c .init "$TMP/st_summary.json")"
grep -q "init: 28 tensors from $TMP/src.safetensors" "$TMP/st.log" || { tail -5 "$TMP/st.log"; fail "init not said"; }
echo "ok: started from the source's safetensors, the first evaluation is the source's last ($src_loss)"
tune ck "{\"checkpoint\": \"$TMP/ck/src.ckpt\"}" || { tail -5 "$TMP/ck.log"; fail "init.checkpoint: the job failed"; }
same_loss "$TMP/ck_summary.json" ||
    fail "init.checkpoint: test_loss $(json "$TMP/ck_summary.json" .test_loss), the source's last $src_loss"
echo "ok: started from the source's checkpoint, the first evaluation is the source's last"
tune fresh null || { tail -5 "$TMP/fresh.log"; fail "the job without init failed"; }
same_loss "$TMP/fresh_summary.json" && fail "without init the first evaluation is the source's last too: no test"
echo "ok: without init it is not ($(json "$TMP/fresh_summary.json" .test_loss))"

# strict mismatches, refused by name
tune wide "{\"safetensors\": \"$TMP/src.safetensors\"}" '.model.gpt.embd = 16' && fail "a model of width 16 took width 32's weights"
grep -q "init.safetensors: $TMP/src.safetensors: tensor 'transformer.wte.weight' is \[256, 32\] there, the model's is \[256, 16\]" "$TMP/wide.log" ||
    { tail -3 "$TMP/wide.log"; fail "a shape mismatch: not refused by name"; }
$TORCH_PY tests/tools/st_torch.py --write "$TMP/edited.safetensors" "$TMP/src.safetensors" drop:transformer.ln_f.bias ||
    fail "could not write the edited file"
$TORCH_PY tests/tools/st_torch.py --write "$TMP/edited2.safetensors" "$TMP/edited.safetensors" extra:head.extra ||
    fail "could not write the edited file"
tune drop "{\"safetensors\": \"$TMP/edited2.safetensors\"}" && fail "a file without a tensor of the model was taken"
grep -q "init.safetensors: $TMP/edited2.safetensors has no tensor 'transformer.ln_f.bias' of the model" "$TMP/drop.log" ||
    { tail -3 "$TMP/drop.log"; fail "a missing tensor: not refused by name"; }
tune wideck "{\"checkpoint\": \"$TMP/ck/src.ckpt\"}" '.model.gpt.embd = 16' && fail "a model of width 16 took width 32's checkpoint"
grep -q "$TMP/ck/src.ckpt: checkpoint is for model gpt with 34176 parameters, job runs gpt with 10944" "$TMP/wideck.log" ||
    { tail -3 "$TMP/wideck.log"; fail "another model's checkpoint: not refused by name"; }
echo "ok: strict: another shape, a missing tensor and another model's checkpoint are refused by name"
tune loose "{\"safetensors\": \"$TMP/edited2.safetensors\", \"strict\": false}" ||
    { tail -5 "$TMP/loose.log"; fail "init.strict false: the job failed"; }
[ "$(jq -c '.init | [.loaded, .missing, .unexpected]' "$TMP/loose_summary.json")" = '[27,["transformer.ln_f.bias"],["head.extra"]]' ] ||
    fail "init.strict false: summary init $(jq -c .init "$TMP/loose_summary.json")"
echo "ok: strict false: 27 tensors loaded, the missing and the unexpected one named"
tune job '{"job": "j-1"}' && fail "init.job was taken by pacer-worker alone"
grep -q "init.job j-1: a coordinator's job" "$TMP/job.log" || { tail -3 "$TMP/job.log"; fail "init.job alone: not refused by name"; }
tune two "{\"job\": \"j-1\", \"checkpoint\": \"$TMP/ck/src.ckpt\"}" && fail "two sources were taken"
grep -q "init: checkpoint and job both given" "$TMP/two.log" || { tail -3 "$TMP/two.log"; fail "two sources: not refused by name"; }
echo "ok: init.job without a coordinator and two sources are refused by name"
