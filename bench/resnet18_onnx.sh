# ResNet-18 for CIFAR-10 (11.2M parameters; tests/tools/onnx_export.py's ResNet18) exported
# from PyTorch as ONNX for training and imported into pacer ("model": {"onnx": FILE}),
# against the same module trained by PyTorch (Debian's python3-torch, bench/torch_lenet.py
# ResNet18) on the same CPU thread: a user's network is bigger than the built-in ones, with
# 128 to 512 channels where ResNet-20 has 16 to 64 (issue 27). The first SUBSET (1024)
# CIFAR-10 training images, batch 64, no augmentation, one epoch, RUNS (3) alternating runs
# each; medians of training samples/s (time inside the training loop) and of peak RSS.
# PyTorch's convolutions (oneDNN) run on the vector width of pacer's kernels (lib.sh's
# torch_isa).
#   RUNS=5 SUBSET=1024 sh bench/resnet18_onnx.sh
. bench/lib.sh
RUNS=${RUNS:-3}
SUBSET=${SUBSET:-1024}
dir="$PACER_SHARED/datasets/cifar-10"
[ -d "$dir" ] || { md ""; md "(CIFAR-10 not found at $dir: resnet18_onnx skipped)"; exit 0; }
/usr/bin/python3 tests/tools/onnx_export.py --resnet18 "$TMP" >"$TMP/export.log" 2>&1 ||
    { tail -3 "$TMP/export.log"; echo "resnet18_onnx: tests/tools/onnx_export.py --resnet18 failed (python3-torch, python3-onnx)"; exit 1; }
cat >"$TMP/spec.json" <<JSON
{"name": "bench", "model": {"onnx": "$TMP/ResNet18.onnx"}, "dataset": {"name": "cifar10", "path": "$dir",
 "train_subset": $SUBSET, "test_subset": 1000, "augment": false}, "epochs": 1, "batch_size": 64,
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "threads": 1, "log_every": 0}
JSON
for i in $(seq "$RUNS"); do
    $WORKER --spec "$TMP/spec.json" --summary "$TMP/p$i.json" >"$TMP/p$i.log" 2>&1 || { tail -3 "$TMP/p$i.log"; exit 1; }
    ONEDNN_MAX_CPU_ISA=$(torch_isa "$TMP/p$i.json") /usr/bin/python3 bench/torch_lenet.py 1 ResNet18 "$SUBSET" 64 \
        >"$TMP/t$i.json" || exit 1
done
med() { for i in $(seq "$RUNS"); do jq "$2" "$TMP/$1$i.json"; done | median; }
runs() { for i in $(seq "$RUNS"); do printf '%.1f ' "$(jq "$2" "$TMP/$1$i.json")"; done; }
p=$(med p .train_samples_per_s) t=$(med t .samples_per_s)
blas=$(jq -r '.per_rank[0].device | "\(.blas) (convolutions: \(.conv // "im2col-gemm"))"' "$TMP/p1.json")
md ""
md "### Imported ResNet-18 (CIFAR-10), one thread, batch 64 (\`RUNS=$RUNS SUBSET=$SUBSET sh bench/resnet18_onnx.sh\`)"
md ""
md "| | kernels | samples/s (median of $RUNS, alternating) | runs | peak RSS MB |"
md "|---|---|---|---|---|"
md "| pacer, ResNet18.onnx imported | $blas${OPENBLAS_CORETYPE:+ (OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE)} | $(printf %.1f "$p") | $(runs p .train_samples_per_s)| $(printf %.0f "$(med p .peak_rss_mb)") |"
md "| PyTorch $(jq -r .torch "$TMP/t1.json"), the same module | oneDNN, ONEDNN_MAX_CPU_ISA=$(jq -r .onednn_isa "$TMP/t1.json") | $(printf %.1f "$t") | $(runs t .samples_per_s)| $(printf %.0f "$(med t .peak_rss_mb)") |"
md ""
md "pacer / PyTorch: **$(ratio "$p" "$t")x** samples/s; peak RSS $(ratio "$(med p .peak_rss_mb)" "$(med t .peak_rss_mb)")x (both hold the CIFAR-10 files they read)."
