# precision bf16 on image classifiers against PyTorch's autocast: ResNet-20 (built in) and
# torchvision's mobilenet_v2 (num_classes 10, 3x32x32, exported by the Python client's
# tests/tools/onnx_zoo_families.py --models and imported), trained on CIFAR-10 on one
# thread, pacer at "precision": "bf16" against the same modules in PyTorch under
# torch.autocast("cpu", dtype=torch.bfloat16) (bench/torch_lenet.py with TORCH_AUTOCAST=bf16):
# bench/vs_torch.inc's alternating rounds with PRECISION=bf16 (wall and CPU time).
# Goal: pacer at least 1.5x autocast on both. PyTorch 1.13's autocast cannot train
# mobilenet_v2 on a CPU (its ReLU6's backward: "hardshrink_backward_cpu" not implemented for
# 'BFloat16'), so that row's PyTorch runs in fp32, what such a user is left with.
#   RUNS=3 SUBSET=512 sh bench/bf16_image_speed.sh
. bench/lib.sh
PRECISION=bf16
TORCH_FP32_ROWS=mobilenet_v2
. bench/vs_torch.inc
/usr/bin/python3 tests/tools/onnx_zoo_families.py --models "$TMP" mobilenet_v2 >"$TMP/zoo.log" 2>&1 ||
    { tail -3 "$TMP/zoo.log"; echo "bf16_image_speed: onnx_zoo_families.py --models failed (python3-torchvision)"; exit 1; }
ROWS="ResNet-20|\"resnet20\"|cifar10|128|resnet20
mobilenet_v2|{\"onnx\":\"$TMP/mobilenet_v2.onnx\"}|cifar10|32|tv:mobilenet_v2"
vs_torch_row() {
    case " $TORCH_FP32_ROWS " in
        *" $1 "*) goal="$goal $1 ${2}x wall, ${3}x CPU time against PyTorch in fp32 (against autocast: not measurable)," ;;
        *) goal="$goal $1 ${2}x wall, ${3}x CPU time ($(awk -v r="$2" -v c="$3" \
            'BEGIN { print (r >= 1.5 && c >= 1.5 ? "met" : "missed") }'))," ;;
    esac
}
vs_torch_run bf16_image_speed
kern=$(jq -r '.kernels | to_entries | map("\(.key) \(.value)") | join(", ")' "$TMP/p1.1.json")
vs_torch_table "bf16 image classifiers against PyTorch's autocast, one thread (\`RUNS=$RUNS SUBSET=$SUBSET sh bench/bf16_image_speed.sh\`)"
md ""
md "pacer's kernels at bf16: $kern. mobilenet_v2's PyTorch runs in fp32: torch 1.13's autocast cannot train it on a CPU (ReLU6's backward is not implemented for BFloat16)." \
    "Goal, at least 1.5x PyTorch's autocast:${goal%,}."
