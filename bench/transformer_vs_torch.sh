# Issue 44's training-speed goal: the small ViT and the ConvNeXt block stack of
# bench/torch_transformer.py (torchvision's VisionTransformer and ConvNeXt classes,
# 3x32x32, exported by the Python client) imported into pacer against the same modules in
# PyTorch (bench/torch_lenet.py bench:NAME), one thread, the same OpenBLAS kernels; goal
# pacer at least 1.3x PyTorch, on wall time and on CPU time. The rounds, medians and the
# CPU-time column are bench/vs_torch.inc's (RUNS rounds, 3); both sides train with SGD
# (the optimizer is a few parameter-sized loops a step, the same for AdamW).
#   RUNS=3 SUBSET=512 sh bench/transformer_vs_torch.sh
. bench/lib.sh
. bench/vs_torch.inc
BATCH=${BATCH:-64}
/usr/bin/python3 bench/torch_transformer.py --export "$TMP" 0 vit convnext >"$TMP/export.log" 2>&1 ||
    { tail -3 "$TMP/export.log"; echo "transformer_vs_torch: torch_transformer.py --export failed"; exit 1; }
# ROWS: name, pacer's model (JSON), data set, batch, PyTorch's module (torch_lenet.py)
ROWS="ViT (3 layers, hidden 48)|{\"onnx\":\"$TMP/vit.onnx\"}|cifar10|$BATCH|bench:vit
ConvNeXt (4 blocks, 32-64 channels)|{\"onnx\":\"$TMP/convnext.onnx\"}|cifar10|$BATCH|bench:convnext"
# vs_torch_row NAME WALL CPU - issue 44's goal on every row
vs_torch_row() {
    goal="$goal ${1%% (*} ${2}x wall, ${3}x CPU time ($(awk -v r="$2" -v c="$3" \
        'BEGIN { print (r >= 1.3 && c >= 1.3 ? "met" : "missed") }')),"
}
vs_torch_run transformer_vs_torch
vs_torch_table "Small ViT and ConvNeXt against PyTorch, one thread (\`RUNS=$RUNS SUBSET=$SUBSET sh bench/transformer_vs_torch.sh\`)"
md ""
md "Issue 44's goal, the ViT and the ConvNeXt stack at least 1.3x PyTorch:${goal%,}."
