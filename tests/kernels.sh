#!/bin/sh
# tests/kernels.sh BUILD - the numeric tests again under each OpenBLAS kernel set this CPU
# can run other than the one OpenBLAS picks itself (which `make test` already used):
# Haswell (AVX2 + FMA) and SkylakeX (AVX-512 F, CD, BW, DQ, VL). The float32 results of
# every comparison with torch, onnxruntime and the float64 reference kernels move with the
# kernels' summation order; a tolerance that holds under one set only is a fault of the
# tolerance (docs/TESTING.md, "Tolerances"). `make test-kernels`; .ci/run runs it after
# `make test`. Each set is checked to be the one OpenBLAS really loaded (OPENBLAS_CORETYPE
# names a set it may quietly replace). Ends with tests/run.sh's closing line over all sets.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.." || exit 1
# The tests whose verdict is a numeric comparison: kernels against the float64 reference,
# imports against torch and onnxruntime, optimizers against torch, ranks against one process.
NUMERIC="test_ops test_model test_onnx_import test_op_table test_compress test_cuda_parity
 adamw_torch ps_adamw onnx_builtin onnx_case onnx_conformance onnx_families onnx_torchvision
 onnx_attention onnx_vit onnx_swin onnx_zoo onnx_zoo_families onnx_train
 mpi_ssgd_equivalence sync_one_process sync_batchnorm train_synthetic test_gpt gpt_torch gpt_onnx_torch onnx_batch_axis
 mpi_shard generate_torch python_client_lm onnx_eval_form test_gemm_bf16 test_conv_amx bf16_train"

flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has() { for f in "$@"; do case " $flags " in *" $f "*) ;; *) return 1 ;; esac; done; }
sets=""
has avx2 fma && sets="$sets Haswell"
has avx512f avx512cd avx512bw avx512dq avx512vl && sets="$sets SkylakeX"
# corename [SET] - the kernel set libopenblas loads with OPENBLAS_CORETYPE=SET, or unset.
# (Unset and empty differ: on a Sapphire Rapids CPU that OpenBLAS 0.3.21 does not know,
# unset falls back to Prescott's SSE3 kernels and an empty value loads Cooperlake's.)
corename() {
    if [ -n "${1:-}" ]; then set -- env OPENBLAS_CORETYPE="$1"; else set -- env -u OPENBLAS_CORETYPE; fi
    "$@" /usr/bin/python3 -c 'import ctypes, ctypes.util
lib = ctypes.CDLL(ctypes.util.find_library("openblas") or "libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())' 2>/dev/null
}
own=$(corename)
echo "kernels: OpenBLAS's own choice here is ${own:-unknown} (make test ran under it); again under:${sets:- none}"
passed=0 failed=0 skipped=0 failures=""
for set in $sets; do
    [ "$set" = "$own" ] && { echo "== $set: OpenBLAS's own choice, already run by make test"; continue; }
    got=$(corename "$set")
    if [ "$got" != "$set" ]; then
        echo "== $set: OpenBLAS loaded '${got:-nothing}' instead: not run"
        skipped=$((skipped + 1))
        continue
    fi
    echo "== OPENBLAS_CORETYPE=$set"
    out=$(mktemp)
    # shellcheck disable=SC2086
    OPENBLAS_CORETYPE=$set sh tests/run.sh "$BUILD" only $NUMERIC | tee "$out"
    line=$(tail -1 "$out")
    rm -f "$out"
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, [0-9]* failed, [0-9]* skipped$/\1/p')
    f=$(echo "$line" | sed -n 's/^[0-9]* passed, \([0-9]*\) failed, [0-9]* skipped$/\1/p')
    s=$(echo "$line" | sed -n 's/^[0-9]* passed, [0-9]* failed, \([0-9]*\) skipped$/\1/p')
    [ -n "$p" ] || { f=1; p=0; s=0; }
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    [ "$f" -eq 0 ] || failures="$failures $set"
done
[ -n "$failures" ] && echo "failed under:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
