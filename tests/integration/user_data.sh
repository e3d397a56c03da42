# A user's own data (issue 26): image folders and .npz files that this test writes itself
# (PNG and JPEG with PIL, .npz with NumPy, from /usr/bin/python3), trained by pacer-worker.
#   - CIFAR-10 written out as PNG files (an image folder) trains bit for bit like the same
#     images through the CIFAR-10 binary reader, same spec and seed, augmentation on: the
#     weight digest after every step is the same. The first 500 training and 100 test
#     images of ../shared/datasets/cifar-10, or gen_dataset's CIFAR-10 when that is absent;
#     both readers get them in the same order (sorted by class, as a folder lists them).
#   - MNIST saved as an .npz trains bit for bit like the IDX files (first 1000 / 200).
#   - The decoded cache: built by the first run, mapped by the next (nothing decoded),
#     rebuilt when a file of the folder changes; two ranks of a host map the same file and
#     /proc/PID/smaps (read by each rank at the end, per_rank[].data_cache) shows its pages
#     shared: each rank's Pss is half its Rss.
#   - The time breakdown of a LeNet-5 run from the cache: phases.data, the gather from the
#     mapped uint8 pixels, is a small part of the step (a loose bound, 15%: the machine is
#     shared; docs/PERFORMANCE.md has the measured figure).
#   - Every bad input the issue lists is refused before training with exit 2 and a message
#     that names the file and what is wrong.
. tests/lib.sh
PY=/usr/bin/python3
$PY -c 'import numpy, PIL' 2>/dev/null || skip "python3-numpy and python3-pil are needed (make deps)"
GEN=$BUILD/tools/gen_dataset
CACHE="$TMP/cache"

# ---- CIFAR-10 as PNG, bit for bit like the binary reader -------------------------------
CIFAR_SRC="$PACER_SHARED/datasets/cifar-10"
if [ -f "$CIFAR_SRC/data_batch_1.bin.gz" ] || [ -f "$CIFAR_SRC/data_batch_1.bin" ]; then
    echo "CIFAR-10 from $CIFAR_SRC"
else
    echo "CIFAR-10 not at $CIFAR_SRC: gen_dataset's instead"
    $GEN cifar "$TMP/gencifar" 500 100 7 >/dev/null || fail "cannot generate CIFAR-10 files"
    CIFAR_SRC="$TMP/gencifar"
fi
$PY - "$CIFAR_SRC" "$TMP" <<'PY' || fail "cannot write the CIFAR-10 subsets"
import gzip, os, sys
import numpy as np
from PIL import Image
src, tmp = sys.argv[1], sys.argv[2]
def records(name, n):
    p = os.path.join(src, name)
    raw = gzip.open(p + ".gz").read() if os.path.exists(p + ".gz") else open(p, "rb").read()
    r = np.frombuffer(raw, np.uint8).reshape(-1, 3073)[:n]
    # a stable sort by label: the order an image folder lists them in
    return r[np.argsort(r[:, 0], kind="stable")]
train, test = records("data_batch_1.bin", 500), records("test_batch.bin", 100)
os.makedirs(f"{tmp}/cbin", exist_ok=True)
for i, part in enumerate(np.array_split(train, 5)):
    part.tofile(f"{tmp}/cbin/data_batch_{i + 1}.bin")
test.tofile(f"{tmp}/cbin/test_batch.bin")
for split, recs in (("train", train), ("test", test)):
    for i, r in enumerate(recs):
        d = f"{tmp}/cpng/{split}/class{r[0]}"
        os.makedirs(d, exist_ok=True)
        Image.fromarray(r[1:].reshape(3, 32, 32).transpose(1, 2, 0), "RGB").save(f"{d}/{i:05d}.png")
PY
cifar_spec() { # NAME DATASET-FIELDS
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "cifar10_quick", "dataset": {$2, "augment": true,
  "mean": [0.4914, 0.4822, 0.4465], "std": [0.247, 0.2435, 0.2616], "cache_dir": "$CACHE"},
 "batch_size": 50, "epochs": 1, "seed": 11, "log_every": 0}
JSON
}
cifar_spec cbin "\"name\": \"cifar10\", \"path\": \"$TMP/cbin\""
cifar_spec cpng "\"format\": \"imagefolder\", \"path\": \"$TMP/cpng\""
for r in cbin cpng; do
    $WORKER --spec "$TMP/$r.json" --summary "$TMP/$r.sum" --weight-digest "$TMP/$r.dig" >"$TMP/$r.log" 2>&1 ||
        { cat "$TMP/$r.log"; fail "$r failed"; }
done
[ "$(wc -l <"$TMP/cbin.dig.rank0")" -ge 10 ] || fail "the binary run's digest has $(wc -l <"$TMP/cbin.dig.rank0") lines"
cmp -s "$TMP/cbin.dig.rank0" "$TMP/cpng.dig.rank0" ||
    fail "CIFAR-10 as PNG trains differently from the binary reader: $(diff "$TMP/cbin.dig.rank0" "$TMP/cpng.dig.rank0" | head -3)"
[ "$(jq -c '[.test_loss, .test_accuracy, .train_loss]' "$TMP/cbin.sum")" = "$(jq -c '[.test_loss, .test_accuracy, .train_loss]' "$TMP/cpng.sum")" ] ||
    fail "summaries differ: $(jq -c '[.test_loss, .test_accuracy]' "$TMP/cbin.sum") vs $(jq -c '[.test_loss, .test_accuracy]' "$TMP/cpng.sum")"
[ "$(jq -c '.dataset | [.format, .classes, .train_samples, .test_samples, .shape]' "$TMP/cpng.sum")" = '["imagefolder",10,500,100,[3,32,32]]' ] ||
    fail "the PNG run's dataset: $(jq -c .dataset "$TMP/cpng.sum")"
echo "ok: CIFAR-10 as 600 PNG files trains bit for bit like the binary reader ($(wc -l <"$TMP/cpng.dig.rank0") weight digests equal)"

# ---- MNIST as .npz, bit for bit like IDX --------------------------------------------------
MNIST="$PACER_SHARED/datasets/mnist"
if [ -d "$MNIST" ]; then
    $PY - "$MNIST" "$TMP/mnist.npz" <<'PY' || fail "cannot write mnist.npz"
import gzip, os, sys
import numpy as np
src, out = sys.argv[1], sys.argv[2]
def idx(name, header, n):
    p = os.path.join(src, name)
    raw = gzip.open(p + ".gz").read() if os.path.exists(p + ".gz") else open(p, "rb").read()
    return np.frombuffer(raw, np.uint8, offset=header)
x = idx("train-images-idx3-ubyte", 16, 0).reshape(-1, 28, 28)[:1000]
y = idx("train-labels-idx1-ubyte", 8, 0)[:1000].astype(np.int64)
xt = idx("t10k-images-idx3-ubyte", 16, 0).reshape(-1, 28, 28)[:200]
yt = idx("t10k-labels-idx1-ubyte", 8, 0)[:200].astype(np.int64)
np.savez_compressed(out, x_train=x, y_train=y, x_test=xt, y_test=yt)
PY
    mnist_spec() { # NAME DATASET-FIELDS
        cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "lenet5", "dataset": {$2, "mean": [0.1307], "std": [0.3081], "cache_dir": "$CACHE"},
 "batch_size": 32, "epochs": 1, "seed": 5, "log_every": 0}
JSON
    }
    mnist_spec midx "\"name\": \"mnist\", \"train_subset\": 1000, \"test_subset\": 200"
    mnist_spec mnpz "\"format\": \"npz\", \"path\": \"$TMP/mnist.npz\""
    for r in midx mnpz; do
        $WORKER --spec "$TMP/$r.json" --summary "$TMP/$r.sum" --weight-digest "$TMP/$r.dig" >"$TMP/$r.log" 2>&1 ||
            { cat "$TMP/$r.log"; fail "$r failed"; }
    done
    cmp -s "$TMP/midx.dig.rank0" "$TMP/mnpz.dig.rank0" ||
        fail "MNIST as .npz trains differently from IDX: $(diff "$TMP/midx.dig.rank0" "$TMP/mnpz.dig.rank0" | head -3)"
    echo "ok: MNIST as .npz trains bit for bit like IDX ($(wc -l <"$TMP/mnpz.dig.rank0") weight digests equal)"
    # The same .npz named by its catalog name under a data root (--data-root): resolved
    # to its format and path, the same training; without the root the name is unknown.
    mkdir -p "$TMP/roots" && cp "$TMP/mnist.npz" "$TMP/roots/mnist.npz"
    mnist_spec mname '"name": "mnist.npz"'
    expect_error 2 "dataset.name: must be one of fashion-mnist, mnist, cifar10" $WORKER --spec "$TMP/mname.json"
    $WORKER --data-root "$TMP/roots" --spec "$TMP/mname.json" --summary "$TMP/mname.sum" \
        --weight-digest "$TMP/mname.dig" >"$TMP/mname.log" 2>&1 || { cat "$TMP/mname.log"; fail "mname failed"; }
    jq -e --arg p "$TMP/roots/mnist.npz" '.dataset | .format == "npz" and .path == $p' "$TMP/mname.sum" >/dev/null ||
        fail "dataset.name mnist.npz: $(jq -c .dataset "$TMP/mname.sum")"
    cmp -s "$TMP/midx.dig.rank0" "$TMP/mname.dig.rank0" || fail "mnist.npz by name trains differently from IDX"
    echo "ok: the .npz named by dataset.name under --data-root trains bit for bit like IDX"
    # The gather from the mapped cache against the whole step (phases, worker/phase.h).
    share=$(jq -r '.per_rank[0].phases | .data / .step_s' "$TMP/mnpz.sum")
    at_most "LeNet-5 from the .npz cache: phases.data / step_s" "$share" 0.15
else
    echo "skip part: MNIST not at $MNIST (the .npz-like-IDX comparison needs it)"
fi

# ---- the cache: reused, shared by two ranks, rebuilt on a change -----------------------
$PY - "$TMP/folder" <<'PY' || fail "cannot write the image folder"
import os, sys
import numpy as np
from PIL import Image
root = sys.argv[1]
rng = np.random.default_rng(1)
for split, n in (("train", 8), ("test", 2)):
    for c in range(10):
        os.makedirs(f"{root}/{split}/digit{c}", exist_ok=True)
        for i in range(n):
            a = (rng.random((28, 28)) * 60 + c * 19).astype(np.uint8)
            ext = "png" if i % 2 == 0 else "jpg"  # both decoders
            Image.fromarray(a, "L").save(f"{root}/{split}/digit{c}/{i:02d}.{ext}")
PY
fspec() { # NAME WORKERS
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "lenet5", "dataset": {"format": "imagefolder", "path": "$TMP/folder", "cache_dir": "$CACHE",
  "augment": true, "hflip": false}, "algorithm": {"name": "$([ "$2" -gt 1 ] && echo ssgd || echo sgd)"},
 "workers": $2, "batch_size": 8, "epochs": 1, "log_every": 0}
JSON
}
fspec f1 1
$WORKER --spec "$TMP/f1.json" --summary "$TMP/f1.sum" >"$TMP/f1.log" 2>&1 || { cat "$TMP/f1.log"; fail "folder run failed"; }
[ "$(jq -c '.dataset.cache.built' "$TMP/f1.sum")" = true ] || fail "first run: $(jq -c .dataset "$TMP/f1.sum")"
fspec f2 2
$MPIRUN -np 2 $WORKER --spec "$TMP/f2.json" --summary "$TMP/f2.sum" >"$TMP/f2.log" 2>&1 ||
    { cat "$TMP/f2.log"; fail "2-rank folder run failed"; }
[ "$(jq -c '.dataset.cache | [.built, .path]' "$TMP/f2.sum")" = "$(jq -c '[false, .dataset.cache.path]' "$TMP/f1.sum")" ] ||
    fail "second run did not map the first run's cache: $(jq -c .dataset.cache "$TMP/f2.sum")"
grep -q "mapped from cache" "$TMP/f2.log" || fail "the log does not say the cache was mapped"
# One file (the same inode, not only the same name), and every page of it shared.
jq -e '[.per_rank[].data_cache.inode] | length == 2 and .[0] > 0 and .[0] == .[1]' "$TMP/f2.sum" >/dev/null ||
    fail "the two ranks do not map one cache file: $(jq -c '[.per_rank[].data_cache]' "$TMP/f2.sum")"
jq -e '[.per_rank[].data_cache | .mappings == 2 and .rss_kb > 0 and (.pss_kb * 2 - .rss_kb | fabs) <= 8] | all and length == 2' \
    "$TMP/f2.sum" >/dev/null || fail "the two ranks do not share the cache's pages: $(jq -c '[.per_rank[].data_cache]' "$TMP/f2.sum")"
echo "ok: two ranks map one cache file; per rank $(jq -c '.per_rank[0].data_cache' "$TMP/f2.sum") (Pss = Rss / 2: every page shared)"
# A changed image rebuilds the cache; an unchanged folder does not.
$PY -c "from PIL import Image; Image.new('L', (28, 28), 200).save('$TMP/folder/train/digit3/00.png')"
touch -d '2001-01-01' "$TMP/folder/train/digit3/00.png"
$WORKER --spec "$TMP/f1.json" --summary "$TMP/f3.sum" >"$TMP/f3.log" 2>&1 || { cat "$TMP/f3.log"; fail "run after the change failed"; }
[ "$(jq -c '.dataset.cache.built' "$TMP/f3.sum")" = true ] && jq -e '.dataset.cache_note | test("stale")' "$TMP/f3.sum" >/dev/null ||
    fail "a changed file did not rebuild the cache: $(jq -c .dataset "$TMP/f3.sum")"
echo "ok: a changed image rebuilds the cache ($(jq -r .dataset.cache_note "$TMP/f3.sum"))"

# ---- bad input: exit 2 before training, the file and the problem named -----------------
bad_folder() { # NAME PATTERN [EXTRA-DATASET-FIELDS]: $TMP/NAME is the folder
    echo "{\"model\": \"lenet5\", \"dataset\": {\"format\": \"imagefolder\", \"path\": \"$TMP/$1\", \"cache_dir\": \"$CACHE\"${3:-}}}" >"$TMP/$1.json"
    expect_error 2 "$2" $WORKER --spec "$TMP/$1.json"
}
good_copy() { rm -rf "$TMP/$1" && cp -r "$TMP/folder" "$TMP/$1"; }
good_copy trunc
head -c 100 "$TMP/folder/train/digit1/00.png" >"$TMP/trunc/train/digit1/00.png"
bad_folder trunc "trunc/train/digit1/00.png: corrupt PNG"
good_copy truncj
head -c 300 "$TMP/folder/train/digit1/01.jpg" >"$TMP/truncj/train/digit1/01.jpg"
bad_folder truncj "truncj/train/digit1/01.jpg: corrupt JPEG"
good_copy zero
: >"$TMP/zero/test/digit2/00.png"
bad_folder zero "zero/test/digit2/00.png: empty file (0 bytes)"
good_copy gif
$PY -c "from PIL import Image; Image.new('L', (28, 28)).save('$TMP/gif/train/digit0/extra.gif')"
bad_folder gif "gif/train/digit0/extra.gif: format not recognised"
good_copy cmyk
$PY -c "from PIL import Image; Image.new('CMYK', (28, 28)).save('$TMP/cmyk/train/digit0/extra.jpg')"
bad_folder cmyk "cmyk/train/digit0/extra.jpg: CMYK JPEG is not supported"
good_copy emptyclass
mkdir "$TMP/emptyclass/train/digit10"
bad_folder emptyclass "emptyclass/train/digit10: a class folder without images"
good_copy extraclass
mkdir "$TMP/extraclass/test/zebra" && cp "$TMP/folder/test/digit0/00.png" "$TMP/extraclass/test/zebra/"
bad_folder extraclass "extraclass/test/zebra: a class the training split"
good_copy big
$PY -c "from PIL import Image; Image.new('L', (40, 40)).save('$TMP/big/train/digit5/00.png')"
bad_folder big "big/train/digit5/00.png: image is 40x40, the model takes 28x28 (set dataset.resize"
# A decompression bomb: a PNG announcing 30000 x 30000 pixels in a few dozen bytes.
good_copy bomb
$PY - "$TMP/bomb/train/digit4/00.png" <<'PY'
import struct, sys, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
ihdr = struct.pack(">IIBBBBB", 30000, 30000, 8, 0, 0, 0, 0)
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 100)) + chunk(b"IEND", b""))
PY
bad_folder bomb "bomb/train/digit4/00.png: image of 30000 x 30000 pixels is larger than pacer decodes"
# Resized, the same 40x40 image trains.
good_copy big
$PY -c "from PIL import Image; Image.new('L', (40, 40)).save('$TMP/big/train/digit5/00.png')"
echo "{\"model\": \"lenet5\", \"log_every\": 0, \"dataset\": {\"format\": \"imagefolder\", \"path\": \"$TMP/big\", \"cache_dir\": \"$CACHE\", \"resize\": [28, 28]}}" >"$TMP/resized.json"
$WORKER --spec "$TMP/resized.json" --summary "$TMP/resized.sum" >"$TMP/resized.log" 2>&1 || { cat "$TMP/resized.log"; fail "resize [28, 28] did not train"; }
echo "ok: with dataset.resize [28, 28] the 40x40 image is resized and trains"

# .npz files: each broken one way.
$PY - "$TMP" <<'PY' || fail "cannot write the .npz files"
import sys
import numpy as np
t = sys.argv[1]
x = np.zeros((100, 28, 28), np.uint8); y = np.arange(100) % 10
xt = np.zeros((20, 28, 28), np.uint8); yt = np.arange(20) % 10
np.savez(f"{t}/noytest.npz", x_train=x, y_train=y, x_test=xt)
np.savez(f"{t}/lengths.npz", x_train=x, y_train=y[:99], x_test=xt, y_test=yt)
np.savez(f"{t}/dtype.npz", x_train=x.astype(np.int64), y_train=y, x_test=xt, y_test=yt)
np.savez(f"{t}/ydtype.npz", x_train=x, y_train=y.astype(np.float32), x_test=xt, y_test=yt)
np.savez(f"{t}/classes.npz", x_train=x, y_train=np.arange(100) % 12, x_test=xt, y_test=yt)
np.savez(f"{t}/testlabel.npz", x_train=x, y_train=y % 5, x_test=xt, y_test=yt)
np.savez(f"{t}/floats.npz", x_train=x.astype(np.float32) + 255, y_train=y, x_test=xt.astype(np.float32), y_test=yt)
open(f"{t}/notzip.npz", "wb").write(b"x_train, y_train")
PY
bad_npz() { # NAME PATTERN
    echo "{\"model\": \"lenet5\", \"dataset\": {\"format\": \"npz\", \"path\": \"$TMP/$1.npz\", \"cache_dir\": \"$CACHE\"}}" >"$TMP/$1.json"
    expect_error 2 "$2" $WORKER --spec "$TMP/$1.json"
}
bad_npz noytest "noytest.npz: no array y_test"
bad_npz lengths "lengths.npz: y_train has 99 labels, x_train has 100 images"
bad_npz dtype "dtype.npz: x_train: dtype '<i8': images must be uint8"
bad_npz ydtype "ydtype.npz: y_train: dtype '<f4': labels must be integers"
bad_npz testlabel "testlabel.npz: y_test: label 5 at index 5 is not a training class"
bad_npz floats "floats.npz: x_train: value 255 of sample 0 is outside \[0, 1\]"
bad_npz notzip "notzip.npz: not a zip archive"
echo "ok: every bad input refused with exit 2, naming the file"
# 12 classes: a built-in's head takes them (issue 42); an ONNX model's width is checked in
# tests/integration/builtin_classes.sh.
echo "{\"model\": \"lenet5\", \"log_every\": 0, \"dataset\": {\"format\": \"npz\", \"path\": \"$TMP/classes.npz\", \"cache_dir\": \"$CACHE\"}}" >"$TMP/classes.json"
$WORKER --spec "$TMP/classes.json" --summary "$TMP/classes.sum" >"$TMP/classes.log" 2>&1 || { cat "$TMP/classes.log"; fail "lenet5 on 12 classes did not train"; }
[ "$(jq -r .dataset.classes "$TMP/classes.sum")" = 12 ] || fail "classes.npz: summary.dataset $(jq -c .dataset "$TMP/classes.sum")"
echo "ok: lenet5 trains on the 12-class .npz"

# ---- an .npz bomb, and a large .npz streamed (issue 42) ------------------------------------
# A few MB of deflated zeros may declare GBs (within deflate's 1,040:1): the worker must
# refuse a declared size beyond the bound (PACER_DATA_MAX_MB, 1 GiB here) before decoding,
# and decode a large one a chunk at a time into the cache, never holding the array. Both
# archives are written here, zeros streamed through zipfile (nothing held whole). The
# worker's peak resident size comes from getrusage (RUSAGE_CHILDREN): below 300 MB, where
# the old decoder held the 600 MB array and the 600 MB of the cache it wrote.
$PY - "$TMP" <<'PY' || fail "cannot write the .npz bombs"
import io, sys, zipfile
import numpy as np
t = sys.argv[1]
def header(descr, shape):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d.encode()
def array(zf, name, a):
    buf = io.BytesIO()
    np.save(buf, a)
    zf.writestr(name + ".npy", buf.getvalue())
def zeros(zf, name, shape):
    n = int(np.prod(shape))
    with zf.open(name + ".npy", "w", force_zip64=True) as f:
        f.write(header("|u1", shape))
        block = bytes(16 << 20)
        while n > 0:
            f.write(block[:min(n, len(block))])
            n -= len(block)
for name, n in (("bomb", 2750000), ("stream", 765000)):
    with zipfile.ZipFile(f"{t}/{name}.npz", "w", zipfile.ZIP_DEFLATED) as zf:
        zeros(zf, "x_train", (n, 28, 28))
        array(zf, "y_train", (np.arange(n) % 10).astype(np.uint8))
        xt = np.zeros((10, 28, 28), np.float32)
        xt[9, 0, 0] = 2.0  # stream.npz fails late: x_test's last sample, after x_train is decoded
        array(zf, "x_test", xt)
        array(zf, "y_test", np.arange(10))
PY
peak_rss() { # FILE CMD... - runs CMD, writes its peak resident size (kB) to FILE, exits as it did
    out=$1
    shift
    $PY -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$out" "$@"
}
echo "bomb.npz: $(wc -c <"$TMP/bomb.npz") bytes, stream.npz: $(wc -c <"$TMP/stream.npz") bytes"
for r in bomb stream; do
    echo "{\"model\": \"lenet5\", \"dataset\": {\"format\": \"npz\", \"path\": \"$TMP/$r.npz\", \"cache_dir\": \"$CACHE\"}}" >"$TMP/$r.json"
done
expect_error 2 "bomb.npz: x_train: shape (2750000, 28, 28) of '|u1' declares 2156000000 bytes, more than the 1073741824 bytes a data set may decode to (PACER_DATA_MAX_MB)" \
    peak_rss "$TMP/bomb.rss" env PACER_DATA_MAX_MB=1024 $WORKER --spec "$TMP/bomb.json"
at_most "the bomb's peak RSS (kB)" "$(cat "$TMP/bomb.rss")" 307200
expect_error 2 "stream.npz: x_test: value 2 of sample 9 is outside \[0, 1\]" \
    peak_rss "$TMP/stream.rss" env PACER_DATA_MAX_MB=1024 $WORKER --spec "$TMP/stream.json"
at_most "peak RSS (kB) of the worker that streamed 600 MB of x_train into the cache" "$(cat "$TMP/stream.rss")" 307200
left=$(ls "$CACHE" | grep '\.tmp\.')
[ -z "$left" ] || fail "a failed build left its temporary file: $left"
echo "ok: the failed build of stream.npz left no temporary file in $CACHE"

# All of MNIST as an .npz, with train_subset 20000 and test_subset 64: only those are
# decoded (x_train in two chunks, 10,699 images (8 MiB) then 9,301; the rest is not
# read), into a cache holding the IDX files' bytes: its training pixels are the first
# 20,000 of train-images-idx3-ubyte, its test pixels the first 64 of t10k's
# (worker/dcache.h: a 4096-byte header, then per split the (N, 1, 28, 28) uint8 pixels,
# int32 labels, the next split at a page boundary). --time-budget: the training itself
# is not what this checks.
if [ -d "$MNIST" ]; then
    $PY - "$MNIST" "$TMP/mnistall.npz" <<'PY' || fail "cannot write mnistall.npz"
import gzip, os, sys
import numpy as np
src, out = sys.argv[1], sys.argv[2]
def idx(name, header):
    p = os.path.join(src, name)
    raw = gzip.open(p + ".gz").read() if os.path.exists(p + ".gz") else open(p, "rb").read()
    return np.frombuffer(raw, np.uint8, offset=header)
np.savez_compressed(out, x_train=idx("train-images-idx3-ubyte", 16).reshape(-1, 28, 28),
                    y_train=idx("train-labels-idx1-ubyte", 8), x_test=idx("t10k-images-idx3-ubyte", 16).reshape(-1, 28, 28),
                    y_test=idx("t10k-labels-idx1-ubyte", 8))
PY
    mnist_spec mall "\"format\": \"npz\", \"path\": \"$TMP/mnistall.npz\", \"train_subset\": 20000, \"test_subset\": 64"
    $WORKER --spec "$TMP/mall.json" --summary "$TMP/mall.sum" --time-budget 1 >"$TMP/mall.log" 2>&1 ||
        { cat "$TMP/mall.log"; fail "mall failed"; }
    $PY - "$MNIST" "$(jq -r .dataset.cache.path "$TMP/mall.sum")" <<'PY' || fail "the streamed cache differs from the IDX bytes"
import gzip, os, sys
import numpy as np
src, cache = sys.argv[1], sys.argv[2]
def idx(name, header):
    p = os.path.join(src, name)
    raw = gzip.open(p + ".gz").read() if os.path.exists(p + ".gz") else open(p, "rb").read()
    return np.frombuffer(raw, np.uint8, offset=header)
c = np.fromfile(cache, np.uint8)
up = lambda x, a: (x + a - 1) // a * a
off = 4096
for images, labels, n in (("train-images-idx3-ubyte", "train-labels-idx1-ubyte", 20000), ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 64)):
    x, y = idx(images, 16)[:n * 784], idx(labels, 8)[:n]
    assert np.array_equal(c[off:off + n * 784], x), f"{images}: pixels differ"
    lab = c[off + up(n * 784, 8):off + up(n * 784, 8) + 4 * n].view(np.int32)
    assert np.array_equal(lab, y.astype(np.int32)), f"{labels}: labels differ"
    end = off + up(n * 784, 8) + 4 * n
    off = up(end, 4096)
assert len(c) == end, f"cache of {len(c)} bytes, the layout ends at {end}"
PY
    jq -e '.dataset | .train_samples == 20000 and .test_samples == 64' "$TMP/mall.sum" >/dev/null ||
        fail "mall: $(jq -c .dataset "$TMP/mall.sum")"
    echo "ok: all of MNIST as .npz, subsets 20000 / 64: those stream into a cache of the IDX files' bytes (labels too)"
fi
