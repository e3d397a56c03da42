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
# loop) of each, and torch_time / pacer_time as the median of the rounds' ratios (a round's
# two runs share the machine's load). A loaded machine moves wall time: each round also
# times the step on CPU time (build/bench/layer_profile, which imports the same ONNX file,
# against PyTorch's samples_per_cpu_s), as resnet_vs_pytorch.sh does.
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
        lp=$(echo "$model" | jq -r 'if type == "object" then .onnx else . end')
        $BUILD/bench/layer_profile --batch "$batch" --steps 5 "$lp" >"$TMP/l$k.$i.txt" ||
            { echo "zoo_vs_torch: layer_profile on $name failed"; exit 1; }
    done
done
# step_ms K p|t: the median step time in ms of row K's pacer or PyTorch runs, and the runs
ms() { jq -r --argjson b "$2" "1000 * \$b / $3" "$1"; }
step_ms() {
    for i in $(seq "$RUNS"); do
        if [ "$2" = p ]; then ms "$TMP/p$1.$i.json" "$3" .train_samples_per_s; else ms "$TMP/t$1.$i.json" "$3" .samples_per_s; fi
    done
}
# cpu_ms K p|t BATCH: the step's CPU time in ms of each round (layer_profile's step_ms;
# PyTorch's samples_per_cpu_s)
cpu_ms() {
    for i in $(seq "$RUNS"); do
        if [ "$2" = p ]; then sed -n 's/.*step_ms=\([0-9.]*\).*/\1/p' "$TMP/l$1.$i.txt" | head -1
        else ms "$TMP/t$1.$i.json" "$3" .samples_per_cpu_s; fi
    done
}
# round_ratios K: each round's PyTorch / pacer wall step time
round_ratios() { paste -d' ' "$TMP/rt$1" "$TMP/rp$1" | awk '{ print $1 / $2 }'; }
blas=$(jq -r '.per_rank[0].device | "\(.blas) (convolutions: \(.conv // "im2col-gemm"))"' "$TMP/p1.1.json")
obl=$(/usr/bin/python3 -c 'import ctypes; f = ctypes.CDLL("libopenblas.so.0").openblas_get_config
f.restype = ctypes.c_char_p; print(f().decode())' 2>/dev/null || echo "not read")
md ""
md "### torchvision's zoo against PyTorch, one thread (\`RUNS=$RUNS SUBSET=$SUBSET sh bench/zoo_vs_torch.sh\`)"
md ""
md "$(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p')), $(nproc) cores, shared with other work during the runs; $obl (openblas_get_config), pacer's kernels $blas${OPENBLAS_CORETYPE:+ (OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE in the environment)};" \
    "PyTorch $(jq -r .torch "$TMP/t1.1.json") (oneDNN, ONEDNN_MAX_CPU_ISA=$(jq -r .onednn_isa "$TMP/t1.1.json"))." \
    "Load average before the runs: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg)."
md ""
md "| network | batch | pacer step ms (median of $RUNS) | runs | PyTorch step ms (median of $RUNS) | runs | torch_time / pacer_time (median of the rounds' ratios) | on CPU time (medians) |"
md "|---|---|---|---|---|---|---|---|"
for k in $(seq "$nrows"); do
    IFS='|' read -r name model data batch tmod <<EOF
$(row $k)
EOF
    step_ms $k p "$batch" >"$TMP/rp$k"
    step_ms $k t "$batch" >"$TMP/rt$k"
    p=$(median <"$TMP/rp$k") t=$(median <"$TMP/rt$k") r=$(round_ratios $k | median)
    pc=$(cpu_ms $k p "$batch" | median) tc=$(cpu_ms $k t "$batch" | median)
    md "| $name | $batch | $(printf %.1f "$p") | $(xargs printf '%.1f ' <"$TMP/rp$k")| $(printf %.1f "$t") |" \
        "$(xargs printf '%.1f ' <"$TMP/rt$k")| **$(printf %.2f "$r")x** ($(round_ratios $k | xargs printf '%.2f ')) |" \
        "$(ratio "$tc" "$pc")x ($(printf %.1f "$tc") / $(printf %.1f "$pc") ms) |"
    case $name in mobilenet_v2 | efficientnet_b0)
        goal="$goal $name $(printf %.2f "$r")x wall, $(ratio "$tc" "$pc")x CPU time ($(awk -v r="$r" -v c="$(ratio "$tc" "$pc")" \
            'BEGIN { print (r >= 1.5 && c >= 1.5 ? "met" : "missed") }'))," ;;
    esac
done
md ""
md "Issue 43's goal, mobilenet_v2 and efficientnet_b0 at least 1.5x PyTorch:${goal%,}."
