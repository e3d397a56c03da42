# freeze: a built-in GPT (2 blocks, width 32) trained 2 epochs on 2 ranks (ssgd, AdamW with
# weight decay 0.1, clip_norm 1) with "freeze": ["transformer.h.0.*", "transformer.wpe.weight"]:
# every tensor those globs match is bit for bit its initial value after training (the
# initial and the trained weights, --export-onnx-init and --export-onnx, compared by
# tests/tools/st_torch.py's reader of --export-safetensors and onnx's), every other one has
# moved, and the summary's frozen_parameters is the matched tensors' size, with
# trainable_parameters the rest. A glob that matches no parameter is refused by name.
. tests/lib.sh
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
$TORCH_PY -c "import onnx" 2>/dev/null || skip "onnx not importable by /usr/bin/python3"
mkdir -p "$TMP/text"
head -c 2000 "$TEXT" >"$TMP/text/train.txt"
head -c 600 "$TEXT" >"$TMP/text/val.txt"
jq -n --arg data "$TMP/text" \
    '{name: "frozen", model: {gpt: {layers: 2, heads: 2, embd: 32, block_size: 16}},
      dataset: {format: "text", path: $data}, algorithm: {name: "ssgd"}, workers: 2, batch_size: 4,
      epochs: 2, seed: 7, device: "cpu", log_every: 0,
      optimizer: {kind: "adamw", lr: 0.003, weight_decay: 0.1, clip_norm: 1},
      freeze: ["transformer.h.0.*", "transformer.wpe.weight"]}' >"$TMP/frozen.json"
$MPIRUN -np 2 $WORKER --spec "$TMP/frozen.json" --summary "$TMP/summary.json" --export-onnx-init "$TMP/init.onnx" \
    --export-safetensors "$TMP/trained.safetensors" >"$TMP/run.log" 2>&1 ||
    { tail -20 "$TMP/run.log"; fail "mpirun -np 2 pacer-worker (frozen tensors) failed"; }
$TORCH_PY - "$TMP/init.onnx" "$TMP/trained.safetensors" "$TMP/summary.json" <<'PY' || fail "frozen tensors moved, or the counts are wrong (above)"
import fnmatch, json, sys
import numpy as np
import onnx
from onnx import numpy_helper
sys.path.insert(0, "tests/tools")
import st_torch
init = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[1]).graph.initializer}
trained, _ = st_torch.read(sys.argv[2])
summary = json.load(open(sys.argv[3]))
globs = ["transformer.h.0.*", "transformer.wpe.weight"]
frozen = moved = bad = 0
for name, a in trained.items():
    same = np.array_equal(init[name].view(np.uint32), a.view(np.uint32))
    if any(fnmatch.fnmatchcase(name, g) for g in globs):
        frozen += a.size
        if not same:
            print("freeze: %s moved" % name)
            bad += 1
    else:
        moved += a.size
        if same:
            print("freeze: %s did not move, and is not frozen" % name)
            bad += 1
want = [moved, frozen]
got = [summary.get("trainable_parameters"), summary.get("frozen_parameters")]
if got != want:
    print("freeze: summary trainable and frozen %s, want %s" % (got, want))
    bad += 1
print("freeze: %d frozen floats bit for bit their initial values, %d trained ones moved%s" %
      (frozen, moved, "" if not bad else "; %d problems" % bad))
sys.exit(1 if bad else 0)
PY
echo "ok: frozen tensors unchanged after training on 2 ranks (AdamW, weight decay, clipping); the others moved"
jq '.freeze = ["transformer.h.9.*"] | .workers = 1' "$TMP/frozen.json" >"$TMP/none.json"
$WORKER --spec "$TMP/none.json" >"$TMP/none.log" 2>&1 && fail "a glob matching no tensor was taken"
grep -q "freeze: 'transformer.h.9.\*' matches no parameter tensor of the model" "$TMP/none.log" ||
    { tail -3 "$TMP/none.log"; fail "a glob matching no tensor: not refused by name"; }
jq '.freeze = "transformer.*"' "$TMP/frozen.json" >"$TMP/str.json"
$WORKER --spec "$TMP/str.json" >"$TMP/str.log" 2>&1 && fail "freeze as a string was taken"
grep -q "freeze: must be an array of globs" "$TMP/str.log" || { tail -3 "$TMP/str.log"; fail "freeze as a string: message"; }
echo "ok: a glob matching no tensor, and freeze not an array, are refused by name"
