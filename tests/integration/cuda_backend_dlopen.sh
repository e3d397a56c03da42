# The CUDA backend is a shared object that pacer-worker loads with dlopen only when a rank
# may use a GPU (model/backend_cuda.c, model/backend_cuda_abi.h, worker/train.c):
#   - pacer-worker has no CUDA library among its NEEDED entries (readelf -d), in any build;
#     libpacer_cuda.so, when this build has one, is what links cudart, cuDNN and cuBLAS;
#   - device "cpu" loads none of them, even with the library next to the worker, and
#     neither does "auto" on a machine whose driver reports no GPU (LD_DEBUG=files);
#   - the worker copied where no library is trains on the CPU with the same result;
#     there device "cuda" is refused with exit 2 naming the file and the loader's reason,
#     and "auto" trains on the CPU with a log line;
#   - PACER_CUDA_LIB picks the file, and a file that is not a pacer backend is refused;
#   - with the library (a CUDA build), device "cuda" does load it and the CUDA runtime.
. tests/lib.sh
command -v readelf >/dev/null 2>&1 || skip "readelf (binutils) is not installed"
[ -x "$WORKER" ] || fail "$WORKER is not built"
gpu=0
nvidia-smi -L >/dev/null 2>&1 && gpu=1

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
needed "$WORKER" >"$TMP/needed"
if grep -E 'libcudart|libcudnn|libcublas|libcuda\.|libpacer_cuda' "$TMP/needed"; then
    fail "$WORKER links the CUDA libraries above"
fi
echo "ok: pacer-worker needs $(tr '\n' ' ' <"$TMP/needed")"
LIB=$BUILD/libpacer_cuda.so
if [ -f "$LIB" ]; then
    needed "$LIB" >"$TMP/needed.so"
    for l in libcudart libcudnn libcublas; do
        grep -q "^$l" "$TMP/needed.so" || fail "$LIB does not link $l"
    done
    echo "ok: $LIB links $(grep -E 'libcud|libcub' "$TMP/needed.so" | tr '\n' ' ')"
fi

spec() {   # spec FILE DEVICE - a few LeNet-5 steps on a subset
    printf '{"model": "lenet5", "device": "%s", "epochs": 1, "log_every": 0, "dataset": {"train_subset": 128, "test_subset": 64}}\n' "$2" >"$1"
}
spec "$TMP/cpu.json" cpu
spec "$TMP/cuda.json" cuda
spec "$TMP/auto.json" auto
cuda_loaded() { grep -E 'file=.*(libcudart|libcudnn|libcublas|libpacer_cuda)' "$1" | head -3; }

# Next to the library, a CPU run maps no CUDA library (the loader names every object it
# maps under LD_DEBUG=files); neither does auto without a GPU.
LD_DEBUG=files "$WORKER" --spec "$TMP/cpu.json" --summary "$TMP/s0.json" >"$TMP/ld0.out" 2>&1 \
    || { tail -20 "$TMP/ld0.out"; fail "CPU run failed"; }
[ -z "$(cuda_loaded "$TMP/ld0.out")" ] || { cuda_loaded "$TMP/ld0.out"; fail "a device cpu run loaded the CUDA libraries above"; }
echo "ok: device cpu loads no CUDA library"
if [ $gpu = 0 ]; then
    LD_DEBUG=files "$WORKER" --spec "$TMP/auto.json" >"$TMP/ld1.out" 2>&1 || { tail -20 "$TMP/ld1.out"; fail "auto run failed"; }
    [ -z "$(cuda_loaded "$TMP/ld1.out")" ] || { cuda_loaded "$TMP/ld1.out"; fail "device auto without a GPU loaded the CUDA libraries above"; }
    grep -q "device auto: rank 0: no \(NVIDIA driver\|CUDA device\).*; training on the CPU" "$TMP/ld1.out" || fail "device auto did not log its fallback"
    echo "ok: device auto without a GPU loads no CUDA library"
fi

# The worker alone in a directory: CPU runs; cuda is refused naming the file; auto falls back.
mkdir "$TMP/bin"
cp "$WORKER" "$TMP/bin/pacer-worker"
"$TMP/bin/pacer-worker" --spec "$TMP/cpu.json" --summary "$TMP/s1.json" >"$TMP/cpu.out" 2>&1 \
    || { tail -20 "$TMP/cpu.out"; fail "CPU run without the library failed"; }
acc0=$(json "$TMP/s0.json" .test_accuracy) acc1=$(json "$TMP/s1.json" .test_accuracy)
[ -n "$acc1" ] && [ "$acc1" != null ] && [ "$acc1" = "$acc0" ] \
    || fail "the run without the library gave test_accuracy $acc1, the one with it $acc0"
echo "ok: pacer-worker without libpacer_cuda.so trains on the CPU (same result)"
"$TMP/bin/pacer-worker" --version | grep -qx "backends: cpu" || fail "--version lists a backend that is not there"
expect_error 2 "device: cuda: cannot load the CUDA backend $TMP/bin/libpacer_cuda.so: .*No such file" \
    "$TMP/bin/pacer-worker" --spec "$TMP/cuda.json"
"$TMP/bin/pacer-worker" --spec "$TMP/auto.json" >"$TMP/auto.out" 2>&1 || { cat "$TMP/auto.out"; fail "device auto without the library failed"; }
if [ $gpu = 1 ]; then want="device auto: rank 0: cannot load the CUDA backend $TMP/bin/libpacer_cuda.so: .*; training on the CPU"
else want="device auto: rank 0: no \(NVIDIA driver\|CUDA device\).*; training on the CPU"; fi
grep -q "$want" "$TMP/auto.out" || { cat "$TMP/auto.out"; fail "device auto did not log its fallback to the CPU"; }
echo "ok: device auto without the library trains on the CPU with a log line"

# PACER_CUDA_LIB: another file; a shared object that is not a backend is refused.
PACER_CUDA_LIB=$TMP/none.so expect_error 2 "cannot load the CUDA backend $TMP/none.so" "$WORKER" --spec "$TMP/cuda.json"
zlib=$(ldconfig -p | sed -n 's/.*libz\.so\.1 .*=> \(.*\)/\1/p' | head -1)
if [ -n "$zlib" ]; then
    PACER_CUDA_LIB=$zlib expect_error 2 "$zlib is not a pacer CUDA backend" "$WORKER" --spec "$TMP/cuda.json"
fi

if [ -f "$LIB" ] && [ $gpu = 0 ]; then
    # With the library, device cuda loads it (and through it the CUDA runtime) before it
    # finds no device.
    LD_DEBUG=files "$WORKER" --spec "$TMP/cuda.json" >"$TMP/ld2.out" 2>&1
    grep -q 'file=.*libpacer_cuda.so' "$TMP/ld2.out" || fail "device cuda did not load $LIB"
    grep -q 'file=.*libcudart' "$TMP/ld2.out" || fail "device cuda did not load the CUDA runtime"
    grep -q "device: cuda: no \(NVIDIA driver\|CUDA device\)" "$TMP/ld2.out" || fail "device cuda without a GPU: wrong error"
    echo "ok: device cuda loads $LIB and the CUDA runtime"
fi
