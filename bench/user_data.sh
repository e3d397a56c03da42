# bench/user_data.sh - a user's data set (issue 26): decoding and caching speed, and a
# LeNet-5 epoch trained from the decoded cache against the same epoch from the IDX files.
#
#   sh bench/user_data.sh            (RUNS=3 by default; make bench runs it too)
#
# Data: MNIST from ../shared/datasets/mnist (70,000 images of 28 x 28), written out by
# this script with PIL and NumPy as
#   - an .npz (np.savez_compressed, the Keras layout),
#   - an image folder of PNG files and one of JPEG files (quality 90), 10,000 images each
#     (the first 8,000 training and 2,000 test images: writing 70,000 files takes longer
#     than the benchmark),
#   - the same PNG folder decoded and resized to 32 x 32 RGB (gray to RGB and bilinear
#     resizing on top of decoding).
# Decoding (bench/dsload_speed.c, medians of RUNS runs): build = decode + convert + write
# the cache + map it (the first job on a host); map = map an existing cache (every later
# job and rank); memory = decode without a cache file.
# Training: pacer-worker, LeNet-5, 1 epoch of 60,000 images, batch 64, one process, the
# same spec and seed from IDX and from the .npz's cache (built beforehand); medians of
# RUNS runs of train_s (time inside training steps), of the data phase per step (the
# gather into the batch buffer) and of phases.data / step_s; the two sources alternate.
. bench/lib.sh
RUNS=${RUNS:-3}
MNIST="$PACER_SHARED/datasets/mnist"
[ -d "$MNIST" ] || { echo "user_data: MNIST not at $MNIST: skipped"; exit 0; }
/usr/bin/python3 -c 'import numpy, PIL' 2>/dev/null || { echo "user_data: python3-numpy, python3-pil missing: skipped"; exit 0; }
/usr/bin/python3 - "$MNIST" "$TMP" <<'PY'
import gzip, os, sys
import numpy as np
from PIL import Image
src, out = sys.argv[1], sys.argv[2]
def idx(name, header):
    p = os.path.join(src, name)
    raw = gzip.open(p + ".gz").read() if os.path.exists(p + ".gz") else open(p, "rb").read()
    return np.frombuffer(raw, np.uint8, offset=header)
x = idx("train-images-idx3-ubyte", 16).reshape(-1, 28, 28)
y = idx("train-labels-idx1-ubyte", 8).astype(np.int64)
xt = idx("t10k-images-idx3-ubyte", 16).reshape(-1, 28, 28)
yt = idx("t10k-labels-idx1-ubyte", 8).astype(np.int64)
np.savez_compressed(f"{out}/mnist.npz", x_train=x, y_train=y, x_test=xt, y_test=yt)
for ext in ("png", "jpg"):
    for split, xs, ys, n in (("train", x, y, 8000), ("test", xt, yt, 2000)):
        for i in range(n):
            d = f"{out}/{ext}/{split}/{ys[i]}"
            os.makedirs(d, exist_ok=True)
            Image.fromarray(xs[i], "L").save(f"{d}/{i:05d}.{ext}", **({"quality": 90} if ext == "jpg" else {}))
PY
md ""
md "### Users' data sets: decoding and the cache ($(date -u +%Y-%m-%d), $(nproc) cores, $RUNS runs, medians)"
md ""
md "| source | images | build (decode + cache) | map an existing cache | decode into memory | cache |"
md "|---|---|---|---|---|---|"
row() { # LABEL FORMAT PATH C H W RESIZE
    j=$("$BUILD/bench/dsload_speed" "$2" "$3" "$4" "$5" "$6" "$7" "$RUNS" "$TMP") || { echo "dsload_speed failed"; exit 1; }
    md "| $1 | $(echo "$j" | jq .images) | $(echo "$j" | jq .build_images_per_s) images/s ($(echo "$j" | jq .build_s) s) | $(echo "$j" | jq .map_images_per_s) images/s ($(echo "$j" | jq .map_s) s) | $(echo "$j" | jq .memory_images_per_s) images/s | $(echo "$j" | jq '.cache_bytes / 1048576 * 10 | round / 10') MiB |"
}
row "MNIST .npz (deflate), 28x28 gray" npz "$TMP/mnist.npz" 1 28 28 0
row "PNG folder, 28x28 gray" imagefolder "$TMP/png" 1 28 28 0
row "JPEG folder (q90), 28x28 gray" imagefolder "$TMP/jpg" 1 28 28 0
row "PNG folder to 32x32 RGB (convert + resize)" imagefolder "$TMP/png" 3 32 32 1

md ""
md "### LeNet-5, 1 epoch of MNIST (60,000 images, batch 64, 1 process): IDX against the .npz's cache"
md ""
spec() { # NAME DATASET-FIELDS
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "lenet5", "dataset": {$2, "mean": [0.1307], "std": [0.3081], "cache_dir": "$TMP/lcache"},
 "batch_size": 64, "epochs": 1, "seed": 3, "log_every": 0}
JSON
}
spec idx '"name": "mnist"'
spec npz "\"format\": \"npz\", \"path\": \"$TMP/mnist.npz\""
"$WORKER" --spec "$TMP/npz.json" >/dev/null 2>&1 || { echo "the cache build run failed"; exit 1; } # builds the cache
md "| source | train_s (median) | data phase per step (median) | phases.data / step_s (median) | samples/s |"
md "|---|---|---|---|---|"
# The two sources alternate, run after run, so that a change in the machine's load
# (shared with other work) falls on both alike.
for r in $(seq "$RUNS"); do
    for s in idx npz; do
        "$WORKER" --spec "$TMP/$s.json" --summary "$TMP/$s.$r.sum" >/dev/null 2>&1 || { echo "$s run failed"; exit 1; }
        jq -r .train_s "$TMP/$s.$r.sum" >>"$TMP/$s.t"
        jq -r '.per_rank[0].phases | .data / .steps * 1000' "$TMP/$s.$r.sum" >>"$TMP/$s.ms"
        jq -r '.per_rank[0].phases | .data / .step_s' "$TMP/$s.$r.sum" >>"$TMP/$s.d"
    done
done
for s in idx npz; do
    t=$(median <"$TMP/$s.t")
    md "| $s | $(printf %.2f "$t") s | $(printf %.3f "$(median <"$TMP/$s.ms")") ms | $(awk -v d="$(median <"$TMP/$s.d")" 'BEGIN { printf "%.2f %%", 100 * d }') | $(awk -v t="$t" 'BEGIN { printf "%.0f", 60000 / t }') |"
done
