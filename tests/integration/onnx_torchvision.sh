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
FAMILIES_SET=torchvision
export FAMILIES_SET
. tests/integration/onnx_families.sh
