# The built-in GPT against torch (tests/tools/gpt_torch.py: a nanoGPT-style module written
# there, GPT-2's pre-norm blocks with a causal mask and the head tied to the token
# embedding). From the weights pacer-worker initialises a GPT of 2 blocks, 2 heads, width 16
# and block 8 with (tests/tools/gpt_tool), on 6 windows of the GNU GPL's text (Debian's
# base-files: /usr/share/common-licenses/GPL-3): the logits and the gradient of every
# parameter tensor within gpt_torch.py's named tolerances of torch's float64 (the tied
# embedding's gradient the sum of its two paths). Then 10 AdamW steps (weight decay 0.1 on
# the 2-D tensors, betas [0.9, 0.95]) of a GPT of width 32 and block 16 on 2 ranks (ssgd,
# batch 4 each: the 8 windows of the text's first 129 bytes are every step's whole batch)
# give torch.optim.AdamW's loss after each step, and the loss falls.
. tests/lib.sh
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
[ -x "$BUILD/tools/gpt_tool" ] || fail "$BUILD/tools/gpt_tool is not built"
$TORCH_PY tests/tools/gpt_torch.py --grads "$BUILD/tools/gpt_tool" "$TMP" "$TEXT" 2 2 16 8 1 1 7 >"$TMP/grads.log" 2>&1
rc=$?
cat "$TMP/grads.log"
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/grads.log")"
[ $rc -eq 0 ] || fail "pacer's GPT differs from torch's module from the same weights (above)"
echo "ok: the built-in GPT's logits and every gradient are torch's from the same weights"

mkdir -p "$TMP/text" "$TMP/adamw"
head -c 129 "$TEXT" >"$TMP/text/train.txt"
cp "$TMP/text/train.txt" "$TMP/text/val.txt"
jq -n --arg data "$TMP/text" \
    '{name: "gpt-adamw", model: {gpt: {layers: 2, heads: 2, embd: 32, block_size: 16}},
      dataset: {format: "text", path: $data}, algorithm: {name: "ssgd"}, workers: 2, batch_size: 4,
      epochs: 10, seed: 7, device: "cpu", log_every: 0,
      optimizer: {kind: "adamw", lr: 0.003, weight_decay: 0.1, betas: [0.9, 0.95]}}' >"$TMP/adamw.json"
$MPIRUN -np 2 $WORKER --spec "$TMP/adamw.json" --metrics "$TMP/adamw.jsonl" --summary "$TMP/adamw_summary.json" \
    >"$TMP/adamw.log" 2>&1 || { tail -20 "$TMP/adamw.log"; fail "mpirun -np 2 pacer-worker (gpt, adamw) failed"; }
$TORCH_PY tests/tools/gpt_torch.py --adamw "$BUILD/tools/gpt_tool" "$TMP/adamw" "$TMP/text/train.txt" \
    2 2 32 16 1 1 7 "$TMP/adamw.jsonl" 10 0.003 0.1 0.9 0.95 || fail "pacer's AdamW steps of the GPT differ from torch's (above)"
echo "ok: 10 AdamW steps of the GPT on 2 ranks give torch's losses"
