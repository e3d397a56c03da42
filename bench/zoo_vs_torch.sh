# Issue 43's training-speed goal: torchvision's mobilenet_v2 and efficientnet_b0 (num_classes
# 10, 3x32x32, exported by the Python client: tests/tools/onnx_zoo_families.py --models)
# imported into pacer against the same modules in PyTorch (bench/torch_lenet.py tv:NAME),
# goal pacer at least 1.5x PyTorch; torchvision's resnet18, without a goal (at 32x32 its
# last stage runs on 1x1 planes: kernels/cpu/conv_crop.h); and the no-regression rows of
# the issue: LeNet-5 (Fashion-MNIST, built in), ResNet-20 (CIFAR-10, built in) and the
# imported ResNet-18 (tests/tools/onnx_export.py --resnet18), each against its PyTorch
# module as lenet_vs_pytorch.sh, resnet_vs_pytorch.sh and resnet18_onnx.sh set them up. One thread,
# alternating rounds (RUNS, 3), medians and the CPU-time column: bench/vs_torch.inc.
#   RUNS=3 SUBSET=512 sh bench/zoo_vs_torch.sh
. bench/lib.sh
. bench/vs_torch.inc
/usr/bin/python3 tests/tools/onnx_zoo_families.py --models "$TMP" mobilenet_v2 efficientnet_b0 resnet18 >"$TMP/zoo.log" 2>&1 ||
    { tail -3 "$TMP/zoo.log"; echo "zoo_vs_torch: onnx_zoo_families.py --models failed (python3-torchvision)"; exit 1; }
/usr/bin/python3 tests/tools/onnx_export.py --resnet18 "$TMP" >"$TMP/r18.log" 2>&1 ||
    { tail -3 "$TMP/r18.log"; echo "zoo_vs_torch: onnx_export.py --resnet18 failed"; exit 1; }
# ROWS: name, pacer's model (JSON), data set, batch, PyTorch's module (torch_lenet.py)
ROWS="mobilenet_v2|{\"onnx\":\"$TMP/mobilenet_v2.onnx\"}|cifar10|32|tv:mobilenet_v2
efficientnet_b0|{\"onnx\":\"$TMP/efficientnet_b0.onnx\"}|cifar10|32|tv:efficientnet_b0
resnet18 (torchvision)|{\"onnx\":\"$TMP/resnet18.onnx\"}|cifar10|32|tv:resnet18
LeNet-5|\"lenet5\"|fashion-mnist|64|LeNet5
ResNet-20|\"resnet20\"|cifar10|128|resnet20
ResNet-18 (imported)|{\"onnx\":\"$TMP/ResNet18.onnx\"}|cifar10|64|ResNet18"
# vs_torch_row NAME WALL CPU - issue 43's goal on its two rows
vs_torch_row() {
    case $1 in mobilenet_v2 | efficientnet_b0)
        goal="$goal $1 ${2}x wall, ${3}x CPU time ($(awk -v r="$2" -v c="$3" \
            'BEGIN { print (r >= 1.5 && c >= 1.5 ? "met" : "missed") }'))," ;;
    esac
}
vs_torch_run zoo_vs_torch
vs_torch_table "torchvision's zoo against PyTorch, one thread (\`RUNS=$RUNS SUBSET=$SUBSET sh bench/zoo_vs_torch.sh\`)"
md ""
md "Issue 43's goal, mobilenet_v2 and efficientnet_b0 at least 1.5x PyTorch:${goal%,}."
