# Issue 43's training-speed goal: torchvision's mobilenet_v2 and efficientnet_b0 (num_classes
# 10, 3x32x32, exported by the Python client: tests/tools/onnx_zoo_families.py --models)
# imported into pacer against the same modules in PyTorch (bench/torch_lenet.py tv:NAME),
# goal pacer at least 1.5x PyTorch; and the no-regression rows of the issue: LeNet-5
# (Fashion-MNIST, built in), ResNet-20 (CIFAR-10, built in) and the imported ResNet-18
# (tests/tools/onnx_export.py --resnet18), each against its PyTorch module as
# lenet_vs_pytorch.sh, resnet_vs_pytorch.sh and resnet18_onnx.sh set them up. One thread
# (threads 1, OPENBLAS_NUM_THREADS=1 from lib.sh, torch.set_num_threads(1)); PyTorch's
# convolutions (oneDNN) on the vector width of pacer's kernels (lib.sh's torch_isa). Each
# round runs every row's pacer and PyTorch back to back (alternating), RUNS rounds (3);
# per row the median training step time (batch / samples per second inside the training
# loop) of each and the ratio torch_time / pacer_time of the medians.
#   RUNS=3 SUBSET=512 sh bench/zoo_vs_torch.sh
. bench/lib.sh
RUNS=${RUNS:-3}
SUBSET=${SUBSET:-512}
cifar="$PACER_SHARED/datasets/cifar-10"
[ -d "$cifar" ] || { md ""; md "(CIFAR-10 not found at $cifar: zoo_vs_torch skipped)"; exit 0; }
goal=""
load0=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 tests/tools/onnx_zoo_families.py --models "$TMP" mobilenet_v2 efficientnet_b0 >"$TMP/zoo.log" 2>&1 ||
    { tail -3 "$TMP/zoo.log"; echo "zoo_vs_torch: onnx_zoo_families.py --models failed (python3-torchvision)"; exit 1; }
/usr/bin/python3 tests/tools/onnx_export.py --resnet18 "$TMP" >"$TMP/r18.log" 2>&1 ||
    { tail -3 "$TMP/r18.log"; echo "zoo_vs_torch: onnx_export.py --resnet18 failed"; exit 1; }
# ROWS: name, pacer's model (JSON), data set, batch, PyTorch's module (torch_lenet.py)
ROWS="mobilenet_v2|{\"onnx\":\"$TMP/mobilenet_v2.onnx\"}|cifar10|32|tv:mobilenet_v2
efficientnet_b0|{\"onnx\":\"$TMP/efficientnet_b0.onnx\"}|cifar10|32|tv:efficientnet_b0
LeNet-5|\"lenet5\"|fashion-mnist|64|LeNet5
ResNet-20|\"resnet20\"|cifar10|128|resnet20
ResNet-18 (imported)|{\"onnx\":\"$TMP/ResNet18.onnx\"}|cifar10|64|ResNet18"
row() { echo "$ROWS" | sed -n "${1}p"; }
nrows=$(echo "$ROWS" | wc -l)
for k in $(seq "$nrows"); do
    IFS='|' read -r name model data batch tmod <<EOF
$(row $k)
EOF
    path=""
    [ "$data" = cifar10 ] && path=",\"path\":\"$cifar\""
    cat >"$TMP/spec$k.json" <<JSON
{"name": "bench", "model": $model, "dataset": {"name": "$data"$path, "train_subset": $SUBSET, "test_subset": 1000,
 "augment": false}, "epochs": 1, "batch_size": $batch, "optimizer": {"lr": 0.02, "momentum": 0.9}, "threads": 1,
 "log_every": 0}
JSON
done
for i in $(seq "$RUNS"); do
    for k in $(seq "$nrows"); do
        IFS='|' read -r name model data batch tmod <<EOF
$(row $k)
EOF
        $WORKER --spec "$TMP/spec$k.json" --summary "$TMP/p$k.$i.json" >"$TMP/p$k.$i.log" 2>&1 ||
            { tail -3 "$TMP/p$k.$i.log"; echo "zoo_vs_torch: pacer on $name failed"; exit 1; }
        ONEDNN_MAX_CPU_ISA=$(torch_isa "$TMP/p$k.$i.json") /usr/bin/python3 bench/torch_lenet.py 1 "$tmod" "$SUBSET" \
            "$batch" >"$TMP/t$k.$i.json" || { echo "zoo_vs_torch: PyTorch on $name failed"; exit 1; }
    done
done
# step_ms K p|t: the median step time in ms of row K's pacer or PyTorch runs, and the runs
ms() { jq -r --argjson b "$2" "1000 * \$b / $3" "$1"; }
step_ms() {
    for i in $(seq "$RUNS"); do
        if [ "$2" = p ]; then ms "$TMP/p$1.$i.json" "$3" .train_samples_per_s; else ms "$TMP/t$1.$i.json" "$3" .samples_per_s; fi
    done
}
blas=$(jq -r '.per_rank[0].device | "\(.blas) (convolutions: \(.conv // "im2col-gemm"))"' "$TMP/p1.1.json")
obl=$(/usr/bin/python3 -c 'import ctypes; f = ctypes.CDLL("libopenblas.so.0").openblas_get_config
f.restype = ctypes.c_char_p; print(f().decode())' 2>/dev/null || echo "not read")
md ""
md "### torchvision's zoo against PyTorch, one thread (\`RUNS=$RUNS SUBSET=$SUBSET sh bench/zoo_vs_torch.sh\`)"
md ""
md "$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $obl (openblas_get_config), pacer's kernels $blas;" \
    "PyTorch $(jq -r .torch "$TMP/t1.1.json") (oneDNN, ONEDNN_MAX_CPU_ISA=$(jq -r .onednn_isa "$TMP/t1.1.json"))." \
    "Load average before the runs: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg)."
md ""
md "| network | batch | pacer step ms (median of $RUNS) | runs | PyTorch step ms (median of $RUNS) | runs | torch_time / pacer_time |"
md "|---|---|---|---|---|---|---|"
for k in $(seq "$nrows"); do
    IFS='|' read -r name model data batch tmod <<EOF
$(row $k)
EOF
    p=$(step_ms $k p "$batch" | median) t=$(step_ms $k t "$batch" | median)
    md "| $name | $batch | $(printf %.1f "$p") | $(step_ms $k p "$batch" | xargs printf '%.1f ')| $(printf %.1f "$t") |" \
        "$(step_ms $k t "$batch" | xargs printf '%.1f ')| **$(ratio "$t" "$p")x** |"
    case $name in mobilenet_v2 | efficientnet_b0)
        goal="$goal $name $(ratio "$t" "$p")x ($(awk -v t="$t" -v p="$p" 'BEGIN { print (t / p >= 1.5 ? "met" : "missed") }'))," ;;
    esac
done
md ""
md "Issue 43's goal, mobilenet_v2 and efficientnet_b0 at least 1.5x PyTorch:${goal%,}."
