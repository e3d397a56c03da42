# A built-in model takes the data set's class count (issue 42, item 2): a 4-class image
# folder (written here with PIL) trains with cifar10_quick and resnet20 for a few steps,
# the summary says 4 classes and the exported ONNX file has 4 outputs (its fc weights 4
# rows); a checkpoint of the 4-class network is refused for a 3-class folder, naming both
# counts; an ONNX model keeps its own width, so the exported 4-output file is refused for
# the 3-class folder, naming both.
. tests/lib.sh
PY=/usr/bin/python3
$PY -c 'import numpy, PIL' 2>/dev/null || skip "python3-numpy and python3-pil are needed (make deps)"
CACHE="$TMP/cache"

# folder ROOT CLASSES: TRAIN 6 and TEST 2 RGB 32x32 PNG images per class, each class its
# own brightness (a pattern the few steps can start to learn; nothing depends on it)
folder() {
    $PY - "$1" "$2" <<'PY' || fail "cannot write the image folder $1"
import os, sys
import numpy as np
from PIL import Image
root, k = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(42)
for split, n in (("train", 6), ("test", 2)):
    for c in range(k):
        d = f"{root}/{split}/class{c}"
        os.makedirs(d, exist_ok=True)
        for i in range(n):
            px = (rng.random((32, 32, 3)) * 60 + c * 50).astype(np.uint8)
            Image.fromarray(px, "RGB").save(f"{d}/{i}.png")
PY
}
folder "$TMP/four" 4
folder "$TMP/three" 3

spec() { # NAME MODEL FOLDER [MORE FIELDS]
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "$2", "dataset": {"format": "imagefolder", "path": "$3", "cache_dir": "$CACHE"},
 "batch_size": 8, "epochs": 1, "seed": 5, "log_every": 0${4:-}}
JSON
}

for model in cifar10_quick resnet20; do
    spec "$model" "$model" "$TMP/four" ", \"checkpoint\": {\"every_steps\": 1, \"dir\": \"$TMP/ck-$model\"}"
    $WORKER --spec "$TMP/$model.json" --summary "$TMP/$model.sum" --export-onnx "$TMP/$model.onnx" \
        >"$TMP/$model.log" 2>&1 || { cat "$TMP/$model.log"; fail "$model on a 4-class folder did not train"; }
    [ "$(jq -c '.dataset | [.format, .classes, .train_samples, .test_samples]' "$TMP/$model.sum")" = '["imagefolder",4,24,8]' ] ||
        fail "$model's summary.dataset: $(jq -c .dataset "$TMP/$model.sum")"
    need_number "$model's test_loss" "$(jq -r .test_loss "$TMP/$model.sum")"
    # the exported file, imported back: 4 outputs
    expect_accepts "$TMP/$model.onnx" "$TMP/$model.check"
    [ "$(jq -r .classes "$TMP/$model.check")" = 4 ] || fail "$model.onnx: $(cat "$TMP/$model.check")"
    echo "ok: $model trains on a 4-class folder; summary classes 4, exported ONNX $(jq -c '{classes, parameters}' "$TMP/$model.check")"
done

# A checkpoint of the 4-class cifar10_quick, resumed on the 3-class folder: refused with
# both counts (exit 2), not a crash.
spec three cifar10_quick "$TMP/three"
expect_error 2 "checkpoint is for model cifar10_quick with 4 classes (.* parameters), the job's data set has 3" \
    $WORKER --spec "$TMP/three.json" --resume-from "$TMP/ck-cifar10_quick/cifar10_quick.ckpt"
echo "ok: a 4-class checkpoint is refused for a 3-class data set"

# An ONNX model keeps its own width: the 4-output export on the 3-class folder is refused.
cat >"$TMP/onnx3.json" <<JSON
{"name": "onnx3", "model": {"onnx": "$TMP/cifar10_quick.onnx"},
 "dataset": {"format": "imagefolder", "path": "$TMP/three", "cache_dir": "$CACHE"}, "batch_size": 8, "epochs": 1, "log_every": 0}
JSON
expect_error 2 "three: 3 classes, model cifar10_quick.onnx has 4 outputs (one per class)" $WORKER --spec "$TMP/onnx3.json"
echo "ok: an ONNX model of 4 outputs is refused for a 3-class folder"
