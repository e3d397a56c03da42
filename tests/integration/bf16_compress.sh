# Gradient compression at precision bf16: 2 ranks of LeNet-5 (ssgd) on a Fashion-MNIST
# subset with bf16 products (kernels/cpu/matmul.h) and algorithm.compression bf16 (the
# gradient all-reduced as bf16) or powersgd rank 2. The two are independent: the products'
# precision rounds the operands of the model's matrix products, the compression the
# gradient a rank sends; PowerSGD's own small products (worker/compress.c) stay float32.
# Each run trains (a test accuracy of 4 x a guess), sends the payload its kind does (bf16: half the
# fused float32 buffer plus the 16-byte extras, as mpi_compress.sh; PowerSGD rank 2: at
# least 10x less), and its summary says both: precision bf16 with the kernels that ran, and
# the compression kind.
. tests/integration/compress_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
spec() { # NAME KIND [EXTRA-COMPRESSION-JSON]
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 4096, "test_subset": 500},
 "precision": "bf16", "algorithm": {"name": "ssgd", "compression": {"kind": "$2"${3:-}}}, "workers": 2,
 "batch_size": 32, "epochs": 1, "seed": 3, "log_every": 0, "device": "cpu", "optimizer": {"lr": 0.05, "momentum": 0.9}}
JSON
}
spec bf16 bf16
spec psgd powersgd ', "rank": 2'
for n in bf16 psgd; do
    run2 $n --summary "$TMP/$n.out"
    S=$TMP/$n.out
    [ "$(json "$S" .precision)" = bf16 ] || fail "$n: summary precision $(json "$S" .precision), want bf16"
    case $(json "$S" .kernels.gemm) in
    amx-bf16 | avx512-bf16 | portable-bf16) ;;
    *) fail "$n: summary kernels.gemm $(jq -c .kernels "$S"), want a bf16 path" ;;
    esac
    at_least "$n at bf16: test_accuracy (10 classes: a guess is 0.1)" "$(json "$S" .test_accuracy)" 0.4
done
[ "$(json "$TMP/bf16.out" .compression.kind)" = bf16 ] || fail "summary compression $(jq -c .compression "$TMP/bf16.out"), want kind bf16"
[ "$(json "$TMP/psgd.out" .compression.kind)" = powersgd ] || fail "summary compression $(jq -c .compression "$TMP/psgd.out"), want kind powersgd"
equals_num "bf16 compression at precision bf16: comm_bytes_per_step" "$(json "$TMP/bf16.out" .comm_bytes_per_step)" $((61706 * 2 + 16))
at_most "PowerSGD rank 2 at precision bf16: comm_bytes_per_step" "$(json "$TMP/psgd.out" .comm_bytes_per_step)" $(((61706 + 4) * 4 / 10))
echo "ok: precision bf16 with compression bf16 and powersgd: both train on $(json "$TMP/bf16.out" .kernels.gemm), and each summary says both"
