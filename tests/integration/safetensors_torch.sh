# safetensors out: a built-in GPT (2 blocks, 2 heads, width 32, block 16, biases, tied head)
# trained 2 epochs on a text, then written by pacer-worker --export-safetensors beside
# --export-onnx. tests/tools/st_torch.py reads the file by the format's specification (no
# safetensors package): every rule of the layout holds, each tensor equals the ONNX
# export's initializer of its name bit for bit, and torch's nanoGPT module (gpt_torch.py)
# loads them by load_state_dict, the tied lm_head.weight the only key not in the file.
. tests/lib.sh
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
mkdir -p "$TMP/text"
head -c 2000 "$TEXT" >"$TMP/text/train.txt"
head -c 600 "$TEXT" >"$TMP/text/val.txt"
jq -n --arg data "$TMP/text" \
    '{name: "gpt-st", model: {gpt: {layers: 2, heads: 2, embd: 32, block_size: 16, bias: true}},
      dataset: {format: "text", path: $data}, algorithm: {name: "ssgd"}, workers: 1, batch_size: 8,
      epochs: 2, seed: 7, device: "cpu", log_every: 0, optimizer: {kind: "adamw", lr: 0.003}}' >"$TMP/gpt.json"
$WORKER --spec "$TMP/gpt.json" --summary "$TMP/summary.json" --export-onnx "$TMP/gpt.onnx" \
    --export-safetensors "$TMP/gpt.safetensors" >"$TMP/run.log" 2>&1 ||
    { tail -20 "$TMP/run.log"; fail "pacer-worker --export-safetensors failed"; }
grep -q "exported the trained weights to $TMP/gpt.safetensors" "$TMP/run.log" ||
    { tail -5 "$TMP/run.log"; fail "pacer-worker did not say where it wrote the safetensors"; }
$TORCH_PY tests/tools/st_torch.py --check "$TMP/gpt.safetensors" "$TMP/gpt.onnx" 2 2 32 16 >"$TMP/check.log" 2>&1
rc=$?
cat "$TMP/check.log"
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/check.log")"
[ $rc -eq 0 ] || fail "the safetensors export is not the trained weights torch loads (above)"
echo "ok: --export-safetensors: read by the specification, the ONNX export's weights, loaded by torch"
"$WORKER" --spec "$TMP/gpt.json" --export-safetensors /nonexistent/dir/x.safetensors >"$TMP/bad.log" 2>&1 &&
    fail "an unwritable --export-safetensors path gave exit status 0"
grep -q "pacer-worker: --export-safetensors: /nonexistent/dir/x.safetensors: cannot write" "$TMP/bad.log" ||
    { tail -3 "$TMP/bad.log"; fail "an unwritable --export-safetensors path: not said by name"; }
echo "ok: an unwritable --export-safetensors path fails by name"

# Hugging Face GPT-2's names and Conv1D layout out (--safetensors-names hf): a second run of the
# same spec, its ONNX export beside; tests/tools/st_hf_torch.py checks each tensor against the
# initializer (the four products of a block transposed), loads the file into a Conv1D GPT-2
# written there, and compares its logits with pacer's forward pass of the ONNX export
[ -x "$BUILD/tools/gpt_tool" ] || fail "$BUILD/tools/gpt_tool is not built"
mkdir -p "$TMP/hfout"
jq '.epochs = 1' "$TMP/gpt.json" >"$TMP/gpt1.json"
$WORKER --spec "$TMP/gpt1.json" --export-onnx "$TMP/hf.onnx" --export-safetensors "$TMP/hf.safetensors" \
    --safetensors-names hf >"$TMP/hf.log" 2>&1 || { tail -20 "$TMP/hf.log"; fail "--safetensors-names hf failed"; }
$TORCH_PY tests/tools/st_hf_torch.py --hf "$TMP/hf.safetensors" "$TMP/hf.onnx" "$BUILD/tools/gpt_tool" "$TMP/hfout" \
    "$TMP/text/train.txt" 2 2 32 16 >"$TMP/hfcheck.log" 2>&1
rc=$?
cat "$TMP/hfcheck.log"
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/hfcheck.log")"
[ $rc -eq 0 ] || fail "--safetensors-names hf: not Hugging Face GPT-2's tensors, or other logits (above)"
echo "ok: --safetensors-names hf: the Conv1D layout, loaded by a GPT-2 module, pacer's logits"

# BF16 out (--safetensors-dtype bf16): torch's round-to-nearest-even of each weight
$WORKER --spec "$TMP/gpt1.json" --export-onnx "$TMP/b.onnx" --export-safetensors "$TMP/b.safetensors" \
    --safetensors-dtype bf16 >"$TMP/b.log" 2>&1 || { tail -20 "$TMP/b.log"; fail "--safetensors-dtype bf16 failed"; }
$TORCH_PY tests/tools/st_hf_torch.py --bf16 "$TMP/b.safetensors" "$TMP/b.onnx" ||
    fail "--safetensors-dtype bf16: not torch's bfloat16 of the weights"
echo "ok: --safetensors-dtype bf16: torch's bfloat16 of every weight"
for bad in "--safetensors-names gpt2:--safetensors-names: 'gpt2' is not one of" \
    "--safetensors-dtype f8:--safetensors-dtype: 'f8' is not one of"; do
    $WORKER --spec "$TMP/gpt1.json" --export-safetensors "$TMP/x.safetensors" ${bad%%:*} >"$TMP/bad.log" 2>&1 &&
        fail "${bad%%:*} was taken"
    grep -q "pacer-worker: ${bad#*:}" "$TMP/bad.log" || { tail -3 "$TMP/bad.log"; fail "${bad%%:*}: not refused by name"; }
done
echo "ok: another names or dtype is refused by name"

# and in: a file of Hugging Face's layout (written here by the specification, from the first
# run's weights) starts a job as the first run's own file does. Jobs of vanishing updates
# (lr 1e-30) evaluate their starting weights: the same weights, the same test_loss, bit for bit.
tune() { # NAME FILE
    jq --arg f "$2" ".name = \"$1\" | .epochs = 1 | .seed = 99 | .optimizer = {kind: \"sgd\", lr: 1e-30, momentum: 0}
        | .init = {safetensors: \$f}" "$TMP/gpt.json" >"$TMP/$1.json"
    $WORKER --spec "$TMP/$1.json" --summary "$TMP/$1_summary.json" >"$TMP/$1.log" 2>&1 ||
        { tail -5 "$TMP/$1.log"; fail "init.safetensors $2: the job failed"; }
}
$TORCH_PY tests/tools/st_hf_torch.py --write-hf "$TMP/in_hf.safetensors" "$TMP/gpt.safetensors" f32 &&
    $TORCH_PY tests/tools/st_hf_torch.py --write-hf "$TMP/in_hf16.safetensors" "$TMP/gpt.safetensors" bf16 bare &&
    $TORCH_PY tests/tools/st_hf_torch.py --write-rounded "$TMP/in_r16.safetensors" "$TMP/gpt.safetensors" bf16 ||
    fail "could not write the Hugging Face files"
tune own "$TMP/gpt.safetensors"
tune hf "$TMP/in_hf.safetensors"
[ "$(json "$TMP/hf_summary.json" .test_loss)" = "$(json "$TMP/own_summary.json" .test_loss)" ] ||
    fail "init from Hugging Face's layout: test_loss $(json "$TMP/hf_summary.json" .test_loss), from the own file's $(json "$TMP/own_summary.json" .test_loss)"
[ "$(jq -c '.init | [.loaded, .missing, .unexpected, .names]' "$TMP/hf_summary.json")" = '[28,[],[],"hf"]' ] ||
    fail "init from Hugging Face's layout: summary init $(jq -c .init "$TMP/hf_summary.json")"
echo "ok: init.safetensors of Hugging Face's names and layout evaluates as the model's own file"
tune hf16 "$TMP/in_hf16.safetensors"
tune r16 "$TMP/in_r16.safetensors"
[ "$(json "$TMP/hf16_summary.json" .test_loss)" = "$(json "$TMP/r16_summary.json" .test_loss)" ] ||
    fail "init from a BF16 file: test_loss $(json "$TMP/hf16_summary.json" .test_loss), from its values in F32 $(json "$TMP/r16_summary.json" .test_loss)"
[ "$(jq -c '.init | [.loaded, .missing, .unexpected, .names]' "$TMP/hf16_summary.json")" = '[28,[],[],"hf"]' ] ||
    fail "init from GPT2Model's names in BF16: summary init $(jq -c .init "$TMP/hf16_summary.json")"
echo "ok: GPT2Model's names in torch's BF16 (mask buffers left out) load as their values in F32"
