# No silent green (issue 17): when CUDA cannot be used, the reason is said and, where a GPU
# is expected, it is a failure.
#   - build/tests/test_cuda_parity with PACER_REQUIRE_GPU=1: on a machine with a GPU it must
#     pass with nothing skipped; without one it must FAIL and print why CUDA is not usable.
#     Without PACER_REQUIRE_GPU (and no /dev/nvidia0) it skips, printing the same reason.
#   - device "cuda" fails (exit 2) with the probe's reason; device "auto" trains on the CPU
#     after saying why on stderr and in the summary ("device": {"requested", "used",
#     "reason"}, per rank and for the job).
#   - the probe tells the cases apart. A stand-in libcuda.so.1 (tests/fakecuda/libcuda.c,
#     first on LD_LIBRARY_PATH) plays a driver that is too old for the runtime the backend
#     was built with, one that reports no device, and one whose cuInit fails; the real
#     backend must name each, and stop before the CUDA runtime starts.
#   - --version says what the backend was built with and which driver that needs.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
PARITY=$BUILD/tests/test_cuda_parity
FAKEDRV=$BUILD/tests/fakecuda
LIB=$BUILD/libpacer_cuda.so
[ -x "$PARITY" ] && [ -x "$WORKER" ] && [ -f "$FAKEDRV/libcuda.so.1" ] || fail "build first (make)"
gpu=0
{ [ -e /dev/nvidia0 ] || nvidia-smi -L >/dev/null 2>&1; } && gpu=1

# ---- the parity test -----------------------------------------------------------------------
PACER_REQUIRE_GPU=1 "$PARITY" >"$TMP/req.out" 2>&1
rc=$?
if [ $gpu = 1 ]; then
    [ $rc = 0 ] || { tail -40 "$TMP/req.out"; fail "PACER_REQUIRE_GPU=1 test_cuda_parity failed on a machine with a GPU"; }
    ! grep -q '^skip:' "$TMP/req.out" || fail "test_cuda_parity skipped on a machine with a GPU"
    echo "ok: a GPU is here and the parity test passes with PACER_REQUIRE_GPU=1"
else
    [ $rc != 0 ] || { cat "$TMP/req.out"; fail "PACER_REQUIRE_GPU=1 test_cuda_parity passed without a GPU"; }
    grep -q 'FAIL: a GPU is required (PACER_REQUIRE_GPU=1) but CUDA is not usable: ..*' "$TMP/req.out" \
        || { head -5 "$TMP/req.out"; fail "the failure does not say why CUDA is not usable"; }
    echo "ok: no GPU, and PACER_REQUIRE_GPU=1 fails: $(grep -m1 '^FAIL: a GPU' "$TMP/req.out")"
    "$PARITY" >"$TMP/skip.out" 2>&1 || { tail -20 "$TMP/skip.out"; fail "test_cuda_parity failed without PACER_REQUIRE_GPU"; }
    grep -q '^skip: ..*' "$TMP/skip.out" || fail "test_cuda_parity skipped without saying why"
    echo "ok: without PACER_REQUIRE_GPU it skips: $(grep -m1 '^skip:' "$TMP/skip.out")"
fi

# ---- the worker ------------------------------------------------------------------------------
spec() {   # spec FILE DEVICE
    printf '{"model": "lenet5", "device": "%s", "epochs": 1, "log_every": 0, "dataset": {"train_subset": 128, "test_subset": 64}}\n' "$2" >"$1"
}
spec "$TMP/cuda.json" cuda
spec "$TMP/auto.json" auto
if [ -f "$LIB" ]; then nodrv="no \(NVIDIA driver\|CUDA device\)"; else nodrv="cannot load the CUDA backend .*libpacer_cuda.so"; fi
if [ $gpu = 0 ]; then
    expect_error 2 "device: cuda: $nodrv" "$WORKER" --spec "$TMP/cuda.json"
    "$WORKER" --spec "$TMP/auto.json" --summary "$TMP/auto-s.json" >"$TMP/auto.out" 2>&1 \
        || { cat "$TMP/auto.out"; fail "device auto without a GPU failed"; }
    grep -q "^device auto: rank 0: no \(NVIDIA driver\|CUDA device\).*; training on the CPU$" "$TMP/auto.out" \
        || { cat "$TMP/auto.out"; fail "device auto did not say why it trains on the CPU"; }
    [ "$(json "$TMP/auto-s.json" '.device.requested + " " + .device.used')" = "auto cpu" ] \
        || fail "summary device: $(json "$TMP/auto-s.json" .device)"
    reason=$(json "$TMP/auto-s.json" .device.reason)
    case $reason in "no NVIDIA driver"*|"no CUDA device"*) ;; *) fail "summary device.reason: '$reason'" ;; esac
    [ "$(json "$TMP/auto-s.json" .per_rank[0].device.reason)" = "$reason" ] || fail "per_rank[0].device has no reason"
    echo "ok: device auto on the CPU says why, in the log and in the summary: $reason"
    # A CPU rank names the OpenBLAS kernels it ran on, as OpenBLAS reports them, including
    # a core forced through OPENBLAS_CORETYPE (kernels/cpu/blas_core.h).
    blas=$(json "$TMP/auto-s.json" .per_rank[0].device.blas)
    case $blas in "" | null | unknown) fail "per_rank[0].device.blas: '$blas'" ;; esac
    OPENBLAS_CORETYPE=Prescott "$WORKER" --spec "$TMP/auto.json" --summary "$TMP/presc.json" >/dev/null 2>&1 \
        || fail "device auto with OPENBLAS_CORETYPE=Prescott failed"
    [ "$(json "$TMP/presc.json" .per_rank[0].device.blas)" = Prescott ] ||
        fail "with OPENBLAS_CORETYPE=Prescott the summary says $(json "$TMP/presc.json" .per_rank[0].device.blas)"
    echo "ok: the summary names the BLAS kernels ($blas here; Prescott when forced)"
    # ... and its convolution kernels, which take AVX-512 only where OpenBLAS does
    # (kernels/cpu/conv_direct.h): never with Prescott's.
    conv=$(json "$TMP/auto-s.json" .per_rank[0].device.conv)
    case $conv in im2col-gemm | direct-avx2 | direct-avx512) ;; *) fail "per_rank[0].device.conv: '$conv'" ;; esac
    pconv=$(json "$TMP/presc.json" .per_rank[0].device.conv)
    case $pconv in im2col-gemm | direct-avx2) ;; *) fail "with OPENBLAS_CORETYPE=Prescott device.conv is '$pconv'" ;; esac
    echo "ok: the summary names the convolution kernels ($conv here, $pconv with Prescott's BLAS)"
fi

# ---- the probe's cases, with a stand-in driver -----------------------------------------------
# device auto asks the driver before it loads the backend, so these hold in every build.
DRV="LD_LIBRARY_PATH=$FAKEDRV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
auto_says() {   # auto_says WHAT ENV... - device auto falls back, logging and summarising WHAT
    want=$1
    shift
    env "$DRV" "$@" "$WORKER" --spec "$TMP/auto.json" --summary "$TMP/fake-s.json" >"$TMP/fake.out" 2>&1 \
        || { cat "$TMP/fake.out"; fail "device auto with $* failed"; }
    grep -q "^device auto: rank 0: $want.*; training on the CPU$" "$TMP/fake.out" \
        || { cat "$TMP/fake.out"; fail "device auto with $* did not log '$want'"; }
    json "$TMP/fake-s.json" .device.reason | grep -q "^$want" || fail "summary reason with $*: $(json "$TMP/fake-s.json" .device)"
    echo "ok: $*: $(json "$TMP/fake-s.json" .device.reason)"
}
auto_says "no CUDA device: the NVIDIA driver (CUDA 13.0) reports none" PACER_FAKE_DEVICES=0
auto_says "no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE" PACER_FAKE_INIT_ERROR=100
auto_says "the NVIDIA driver failed to start: cuInit" PACER_FAKE_INIT_ERROR=999
if [ -f "$LIB" ]; then
    expect_error 2 "device: cuda: no CUDA device: the NVIDIA driver (CUDA 13.0) reports none" \
        env "$DRV" PACER_FAKE_DEVICES=0 "$WORKER" --spec "$TMP/cuda.json"
fi
if [ -f "$LIB" ]; then
    # A driver for CUDA 12.4 under a backend built with CUDA 13: too old, said before the
    # runtime starts (the stand-in has nothing else a runtime could call).
    rt=$(sed -n 's/^#define CUDART_VERSION *\([0-9]*\)/\1/p' "${CUDA_HOME:-/usr/local/cuda}/include/cuda_runtime_api.h" 2>/dev/null)
    old=$(( ${rt:-13000} / 1000 - 1 ))040
    expect_error 2 \
        "device: cuda: the NVIDIA driver is too old: it supports CUDA $(( old / 1000 )).4, and libpacer_cuda.so was built with the CUDA" \
        env "$DRV" PACER_FAKE_DRIVER_VERSION=$old "$WORKER" --spec "$TMP/cuda.json"
    env "$DRV" PACER_FAKE_DRIVER_VERSION=$old "$WORKER" --spec "$TMP/auto.json" --summary "$TMP/old.json" >"$TMP/old.out" 2>&1 \
        || { cat "$TMP/old.out"; fail "device auto with an old driver failed"; }
    case $(json "$TMP/old.json" .device.reason) in "the NVIDIA driver is too old"*) ;;
        *) fail "summary reason with an old driver: $(json "$TMP/old.json" .device.reason)" ;; esac
    env "$DRV" PACER_FAKE_DRIVER_VERSION=$old PACER_REQUIRE_GPU=1 "$PARITY" >"$TMP/old-parity.out" 2>&1 \
        && fail "the parity test passed with a driver too old for the backend"
    grep -q "CUDA is not usable: the NVIDIA driver is too old" "$TMP/old-parity.out" \
        || { head -5 "$TMP/old-parity.out"; fail "the parity test does not say the driver is too old"; }
    echo "ok: a driver too old for the backend's runtime is named as such (worker, summary, parity test)"
    "$WORKER" --version >"$TMP/v.out"
    grep -q "^cuda backend: .*libpacer_cuda.so: built with the CUDA [0-9.]* runtime (needs an NVIDIA driver >= [0-9.]*) and cuDNN [0-9.]*; GPU code: sm_" "$TMP/v.out" \
        || { cat "$TMP/v.out"; fail "--version does not say what the backend needs"; }
    grep -q "^cuda driver: " "$TMP/v.out" || fail "--version does not say which driver it found"
    echo "ok: --version: $(grep '^cuda backend' "$TMP/v.out")"
fi
