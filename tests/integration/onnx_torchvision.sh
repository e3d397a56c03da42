# torchvision's own post-2017 convolutional networks (issue 43): mobilenet_v2,
# mobilenet_v3_small, mnasnet0_5, regnet_y_400mf and shufflenet_v2_x0_5 (x.view(b, g, c // g,
# h, w) folded from its Shape arithmetic into a Reshape, a Transpose, Split as Slices)
# from torchvision.models.get_model(name,
# weights=None, num_classes=10) exported in training form as the Python client does, and
# efficientnet_b0 in training form through the client's own export (torch 1.13's fails
# on stochastic depth's Bernoulli; the client writes ai.pacer:StochasticDepth, p set to 0
# here so that torch's numbers apply), 3x32x32 inputs: the checks of onnx_families.sh (the
# file accepted by --check-onnx; logits, every parameter gradient, the running statistics
# and 4 SGD steps' losses against torch's from the same weights). Skips when torchvision is
# not importable (deploy/install-deps.sh's test group installs python3-torchvision).
# make test runs three of the six: mobilenet_v2 (Clip as ReLU6, inverted residuals),
# efficientnet_b0 (the client's StochasticDepth, SiLU, squeeze-excitation) and
# shufflenet_v2_x0_5 (the channel shuffle's Reshape, Transpose and Split), the ones no
# other test of make test imports from torchvision; mobilenet_v3_small is trained by
# onnx_zoo_families, and mnasnet0_5's and regnet_y_400mf's blocks are onnx_families'
# MNASNetish and RegNetYish. TV_ALL=1 (onnx_torchvision_all, make test-slow): all six.
if [ "${TV_ALL:-0}" = 1 ]; then TORCHVISION_NETS=""
else TORCHVISION_NETS="mobilenet_v2 efficientnet_b0 shufflenet_v2_x0_5"; fi
FAMILIES_SET=torchvision
export FAMILIES_SET TORCHVISION_NETS
. tests/integration/onnx_families.sh
