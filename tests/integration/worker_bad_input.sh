# pacer-worker refuses bad input with exit 2 and one line naming the problem (issue 2):
# specs with a wrong field, and data directories with broken files.
. tests/lib.sh
expect_error 2 "spec FILE is required" $WORKER
expect_error 2 "cannot\|No such" $WORKER --spec "$TMP/nope.json"
echo '{"model": "lenet5", "optimizer": {"lr": -1}}' > "$TMP/lr.json"
expect_error 2 "optimizer.lr: must be in (0, 1000]" $WORKER --spec "$TMP/lr.json"
echo '{"model": "lenet5", "batch_sise": 3}' > "$TMP/typo.json"
expect_error 2 "batch_sise: unknown field" $WORKER --spec "$TMP/typo.json"
echo '{"model": "lenet5",' > "$TMP/syntax.json"
expect_error 2 "invalid JSON" $WORKER --spec "$TMP/syntax.json"

# Data directories with broken files: a truncated image file, then no files at all.
mkdir -p "$TMP/d1" "$TMP/d3"
# IDX header: magic 0x803, 10 images of 28x28, then only 3 bytes of pixels.
printf '\000\000\010\003\000\000\000\012\000\000\000\034\000\000\000\034abc' > "$TMP/d1/train-images-idx3-ubyte"
printf '\000\000\010\001\000\000\000\012\000\001\002\003\004\005\006\007\010\011' > "$TMP/d1/train-labels-idx1-ubyte"
echo "{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\", \"path\": \"$TMP/d1\"}}" > "$TMP/d1.json"
expect_error 2 "d1/train-images-idx3-ubyte.*truncated" $WORKER --spec "$TMP/d1.json"
echo "{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\", \"path\": \"$TMP/d3\"}}" > "$TMP/d3.json"
expect_error 2 "d3/train-images-idx3-ubyte" $WORKER --spec "$TMP/d3.json"
$WORKER --version | grep -q "backends: cpu" || fail "--version does not list backends"
$WORKER --help | grep -q -- "--resume-from" || fail "--help does not document --resume-from"
echo "ok: --version and --help"

# device: "cuda" without a visible GPU is refused before training; "auto" falls back to
# the CPU with a log line (issue 7). On a machine with a GPU the first check does not apply.
# For "cuda" without the CUDA backend library (a build without nvcc/cuDNN) the reason is
# that it cannot be loaded (tests/integration/cuda_backend_dlopen.sh checks that in full).
if [ -f "$BUILD/libpacer_cuda.so" ]; then why="no \(NVIDIA driver\|CUDA device\)"; else why="cannot load the CUDA backend"; fi
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo '{"model": "lenet5", "device": "cuda", "dataset": {"train_subset": 256, "test_subset": 100}}' > "$TMP/cuda.json"
    expect_error 2 "device: cuda: $why" $WORKER --spec "$TMP/cuda.json"
    echo '{"model": "lenet5", "device": "auto", "log_every": 0, "dataset": {"train_subset": 256, "test_subset": 100}}' > "$TMP/auto.json"
    $WORKER --spec "$TMP/auto.json" 2>&1 | grep -q "device auto: rank 0: .*; training on the CPU" \
        || fail "device auto did not say it fell back to the CPU"
    echo "ok: device auto falls back to the CPU with a log line"
fi

# A run that diverges (LeNet-5 at lr 1000, momentum 0.999: the loss becomes NaN) still
# writes its summary: the non-finite figures are null and "diverged" says so. jansson
# refuses NaN, and the summary used to fail with a misleading "out of memory".
$BUILD/tools/gen_dataset idx "$TMP/div" 600 100 7 || fail "cannot generate IDX files"
cat >"$TMP/div.json" <<JSON
{"name": "div", "model": "lenet5", "dataset": {"name": "mnist", "path": "$TMP/div"}, "epochs": 3,
 "batch_size": 32, "optimizer": {"lr": 1000, "momentum": 0.999}, "log_every": 0}
JSON
$WORKER --spec "$TMP/div.json" --summary "$TMP/div.out" >/dev/null 2>"$TMP/div.log" ||
    { cat "$TMP/div.log"; fail "a diverged run did not end cleanly"; }
[ "$(jq -c '[.diverged, .test_loss, .train_loss]' "$TMP/div.out")" = '[true,null,null]' ] ||
    fail "diverged summary: $(jq -c '{diverged, test_loss, train_loss}' "$TMP/div.out")"
echo "ok: a diverged run writes its summary with diverged: true and null losses"
