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
