# lora: a built-in GPT (1 block, 2 heads, width 16, block 16) with rank-4 adapters (alpha 8)
# on attn.c_attn and mlp.c_fc, trained by plain SGD on the 8 windows of the GPL's first 129
# bytes (every step the whole set). tests/tools/lora_torch.py compares it with a PyTorch
# LoRA written there from the same weights: the initial A within PEFT's Kaiming-uniform
# bound, the adapters' updates of steps 1 and 2 and the losses after them within bounds
# derived there, the merged ONNX export W + (alpha / rank) B A; the base weights after
# training are bit for bit the initial ones (--export-onnx-init), the summary counts only
# the adapters as trainable, and the merged safetensors export holds the merged ONNX's
# weights. Then generation: pacer-generate from a LoRA job's checkpoint gives the text its
# last eval_sample gave (both from merged weights), which differs from the first epoch's.
# An imported ONNX model (torch's MLP: Gemm weights fc1.weight, fc2.weight) takes adapters
# with dropout 0.1: base weights unchanged, merged export W + scale B A. Each bad lora
# field is refused by name.
. tests/lib.sh
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
$TORCH_PY -c "import torch, onnx" 2>/dev/null || skip "torch or onnx not importable by /usr/bin/python3"
mkdir -p "$TMP/text"
head -c 129 "$TEXT" >"$TMP/text/train.txt"
cp "$TMP/text/train.txt" "$TMP/text/val.txt"
TARGETS='["transformer.h.*.attn.c_attn.weight", "*.mlp.c_fc.weight"]'
spec() { # EPOCHS EXPORT
    jq -n --arg data "$TMP/text" --argjson e "$1" --arg x "$2" --argjson t "$TARGETS" \
        '{name: "lora", model: {gpt: {layers: 1, heads: 2, embd: 16, block_size: 16}},
          dataset: {format: "text", path: $data}, algorithm: {name: "sgd"}, workers: 1, batch_size: 8,
          epochs: $e, seed: 7, device: "cpu", log_every: 0, optimizer: {kind: "sgd", lr: 0.5, momentum: 0},
          lora: {rank: 4, alpha: 8, targets: $t, export: $x}}'
}
spec 1 separate >"$TMP/one.json"
spec 2 separate >"$TMP/two.json"
spec 2 merged >"$TMP/merged.json"
$WORKER --spec "$TMP/one.json" --export-safetensors "$TMP/step1.safetensors" >"$TMP/one.log" 2>&1 ||
    { tail -5 "$TMP/one.log"; fail "the LoRA job of 1 step failed"; }
$WORKER --spec "$TMP/two.json" --metrics "$TMP/two.jsonl" --summary "$TMP/summary.json" \
    --export-onnx-init "$TMP/init.onnx" --export-onnx "$TMP/merged.onnx" \
    --export-safetensors "$TMP/step2.safetensors" >"$TMP/two.log" 2>&1 ||
    { tail -5 "$TMP/two.log"; fail "the LoRA job of 2 steps failed"; }
$WORKER --spec "$TMP/merged.json" --export-safetensors "$TMP/merged.safetensors" >"$TMP/merged.log" 2>&1 ||
    { tail -5 "$TMP/merged.log"; fail "the LoRA job with export merged failed"; }
$TORCH_PY tests/tools/lora_torch.py "$TMP/text/train.txt" 1 2 16 16 4 8 0.5 \
    "transformer.h.*.attn.c_attn.weight,*.mlp.c_fc.weight" "$TMP/step1.safetensors" "$TMP/step2.safetensors" \
    "$TMP/two.jsonl" "$TMP/merged.onnx" || fail "pacer's LoRA differs from torch's (above)"
echo "ok: LoRA's adapter updates and losses are torch's; the merged export is W + (alpha / rank) B A"

$TORCH_PY - "$TMP/init.onnx" "$TMP/step2.safetensors" "$TMP/merged.onnx" "$TMP/merged.safetensors" "$TMP/summary.json" <<'PY' ||
import json, sys
import numpy as np
import onnx
from onnx import numpy_helper
sys.path.insert(0, "tests/tools")
import st_torch
init = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[1]).graph.initializer}
sep, _ = st_torch.read(sys.argv[2])
merged = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[3]).graph.initializer}
mst, _ = st_torch.read(sys.argv[4])
summary = json.load(open(sys.argv[5]))
bad = []
base = {n: a for n, a in sep.items() if not n.startswith("base_model.model.")}
names = sorted(n for n in sep if n.startswith("base_model.model."))
want = sorted("base_model.model.transformer.h.0.%s.lora_%s.weight" % (m, w) for m in ("attn.c_attn", "mlp.c_fc")
              for w in "AB")
if names != want:
    bad.append("separate export's adapter names %s, want PEFT's %s" % (names, want))
for n, a in base.items():
    if n not in init or init[n].tobytes() != a.tobytes():
        bad.append("base tensor %s is not bit for bit its initial value" % n)
if sorted(mst) != sorted(base):
    bad.append("merged safetensors names %s, want the base names" % sorted(mst))
for n, a in mst.items():
    if n in merged and merged[n].tobytes() != a.tobytes():
        bad.append("merged safetensors %s differs from the merged ONNX" % n)
adapters = sum(sep[n].size for n in names)
if [summary.get("trainable_parameters"), summary.get("frozen_parameters")] != [adapters, sum(a.size for a in base.values())]:
    bad.append("summary trainable %s frozen %s; want %d adapters' and the rest" %
               (summary.get("trainable_parameters"), summary.get("frozen_parameters"), adapters))
for b in bad:
    print("lora: " + b)
print("lora: %d base tensors unchanged, %d adapter floats trainable%s" % (len(base), adapters, "" if not bad else ", %d problems" % len(bad)))
sys.exit(1 if bad else 0)
PY
    fail "the base weights, export names or counts are wrong (above)"
echo "ok: base weights bit for bit unchanged; PEFT's names in the separate export; only the adapters trainable"

# ---- generation from merged weights: eval_sample and pacer-generate from the checkpoint ----
# AdamW for 12 steps moves the adapters enough to change the greedy text: the first epoch's
# sample and the last differ, so a sampler left on the initial weights would be seen.
PROMPT=$(head -c 8 "$TMP/text/train.txt")
jq --arg p "$PROMPT" --arg dir "$TMP/ck" \
    '.name = "gen" | .epochs = 12 | .optimizer = {kind: "adamw", lr: 0.05} | .eval_sample = $p |
     .eval_sample_tokens = 12 | .lora.export = "merged" | .checkpoint = {every_steps: 12, dir: $dir}' \
    "$TMP/two.json" >"$TMP/gen.json"
$WORKER --spec "$TMP/gen.json" --metrics "$TMP/gen.jsonl" >"$TMP/gen.log" 2>&1 ||
    { tail -5 "$TMP/gen.log"; fail "the LoRA job with eval_sample failed"; }
first=$(jq -r 'select(.kind == "epoch" and .rank == 0 and .epoch == 1) | .eval_sample' "$TMP/gen.jsonl")
sample=$(jq -r 'select(.kind == "epoch" and .rank == 0 and .epoch == 12) | .eval_sample' "$TMP/gen.jsonl")
[ -n "$sample" ] || fail "no eval_sample in the last epoch's record"
[ "$first" != "$sample" ] || fail "eval_sample did not change in 12 steps ('$sample'): not the trained weights?"
printf '%s' "$PROMPT" | "$BUILD/pacer-generate" --spec "$TMP/gen.json" --checkpoint-dir "$TMP/ck" \
    --max-tokens 12 --temperature 0 >"$TMP/gen.out" 2>"$TMP/gen.err" ||
    { cat "$TMP/gen.err"; fail "pacer-generate from the LoRA job's checkpoint failed"; }
got=$(tail -1 "$TMP/gen.out" | jq -r .text)
[ "$got" = "$sample" ] || fail "pacer-generate gave '$got', the job's last eval_sample '$sample'"
echo "ok: pacer-generate reads the LoRA job's checkpoint; its greedy text is the last eval_sample's, '$got' (the first: '$first')"

# ---- an imported model: torch's MLP as ONNX (Flatten, Gemm, Relu, Gemm), adapters with dropout --
if [ -d "$PACER_SHARED/datasets/mnist" ]; then
    $TORCH_PY - "$TMP/mlp.onnx" <<'PY' || fail "exporting torch's MLP to ONNX failed"
import sys
import torch
import torch.nn as nn
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(784, 32), nn.Linear(32, 10)
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))
torch.onnx.export(Net(), torch.zeros(1, 1, 28, 28), sys.argv[1], input_names=["input"], output_names=["logits"],
                  dynamic_axes={"input": {0: "b"}, "logits": {0: "b"}}, opset_version=13)
PY
    jq -n --arg onnx "$TMP/mlp.onnx" --arg p "$PACER_SHARED/datasets/mnist" \
        '{model: {onnx: $onnx}, dataset: {name: "mnist", path: $p, train_subset: 1024, test_subset: 256},
          algorithm: {name: "sgd"}, workers: 1, batch_size: 32, epochs: 1, seed: 3, device: "cpu",
          optimizer: {lr: 0.05}, log_every: 0,
          lora: {rank: 4, alpha: 4, dropout: 0.1, targets: ["fc*.weight"], export: "separate"}}' >"$TMP/mlp.json"
    $WORKER --spec "$TMP/mlp.json" --summary "$TMP/mlp.summary.json" --export-onnx-init "$TMP/mlp-init.onnx" \
        --export-onnx "$TMP/mlp-merged.onnx" --export-safetensors "$TMP/mlp.safetensors" >"$TMP/mlp.log" 2>&1 ||
        { tail -5 "$TMP/mlp.log"; fail "LoRA on the imported MLP failed"; }
    $TORCH_PY - "$TMP/mlp.safetensors" "$TMP/mlp-init.onnx" "$TMP/mlp-merged.onnx" "$TMP/mlp.summary.json" <<'PY' ||
import json, sys
import numpy as np
import onnx
from onnx import numpy_helper
sys.path.insert(0, "tests/tools")
import st_torch
t, _ = st_torch.read(sys.argv[1])
init = {x.name: numpy_helper.to_array(x) for x in onnx.load(sys.argv[2]).graph.initializer}
merged = {x.name: numpy_helper.to_array(x) for x in onnx.load(sys.argv[3]).graph.initializer}
bad = []
for m, (IN, OUT) in (("fc1", (784, 32)), ("fc2", (32, 10))):
    A, B = t["base_model.model.%s.lora_A.weight" % m], t["base_model.model.%s.lora_B.weight" % m]
    W = t[m + ".weight"]
    if A.shape != (4, IN) or B.shape != (OUT, 4) or not np.any(B):
        bad.append("%s: A %s, B %s (max |B| %g)" % (m, A.shape, B.shape, np.abs(B).max()))
    if init[m + ".weight"].tobytes() != W.tobytes():
        bad.append("%s.weight moved" % m)
    want = W.astype(np.float64) + (4 / 4) * (B.astype(np.float64) @ A.astype(np.float64))
    mag = np.abs(W.astype(np.float64)) + np.abs(B.astype(np.float64)) @ np.abs(A.astype(np.float64))
    if not np.all(np.abs(merged[m + ".weight"] - want) <= 2.0 ** -24 * np.abs(want) + 12 * 2.0 ** -53 * mag):
        bad.append("%s: the merged weight is not W + scale B A" % m)
s = json.load(open(sys.argv[4]))
if s["trainable_parameters"] != 4 * (784 + 32) + 4 * (32 + 10):
    bad.append("trainable_parameters %s" % s["trainable_parameters"])
for b in bad:
    print("lora (onnx): " + b)
sys.exit(1 if bad else 0)
PY
        fail "LoRA on the imported MLP: exports wrong (above)"
    echo "ok: an imported model's Gemm weights take adapters (dropout 0.1): base unchanged, merged W + scale B A"
else
    echo "skip (part): MNIST is not in $PACER_SHARED/datasets: no imported-model case"
fi

# ---- refusals -----------------------------------------------------------------------------
refused() { # JQ-EDIT MESSAGE
    jq "$1" "$TMP/two.json" >"$TMP/bad.json"
    $WORKER --spec "$TMP/bad.json" >"$TMP/bad.log" 2>&1 && fail "taken: $1"
    grep -qF "$2" "$TMP/bad.log" || { tail -3 "$TMP/bad.log"; fail "$1: not refused with '$2'"; }
}
refused '.lora.rank = 0' "lora.rank: must be"
refused '.lora.rank = 5000' "lora.rank: must be"
refused '.lora.alpha = 0' "lora.alpha: must be"
refused '.lora.dropout = 1' "lora.dropout: must be"
refused '.lora.dropout = -0.1' "lora.dropout: must be"
refused '.lora.targets = []' "lora.targets: an empty list"
refused '.lora.targets = "transformer.*"' "lora.targets: must be an array of globs"
refused '.lora.targets = ["transformer.h.9.*"]' "lora.targets: 'transformer.h.9.*' matches no matrix product's weight"
refused '.lora.targets = ["transformer.wte.weight"]' "lora.targets: 'transformer.wte.weight' matches no matrix product's weight"
refused '.lora.export = "fused"' "lora.export: must be"
refused 'del(.lora.targets)' "lora: lora.targets is missing"
echo "ok: each bad lora field is refused by name"
