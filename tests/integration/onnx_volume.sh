# The pools of volumes (N, C, D, H, W) against torch: MaxPool3d (uneven strides, dilation,
# ceil_mode) and AvgPool3d (ceil_mode, count_include_pad False) after a Conv2d whose output
# is read as a volume (tests/tools/onnx_batch_axis.py's Vol3dish), exported in training
# form as the Python client exports a module, then onnx_families.sh's checks: the file
# accepted by --check-onnx, the evaluation and training logits, every parameter gradient
# (through both pools, each two of the 2-D pools) and 4 SGD steps' losses against torch's
# float64 numbers within onnx_families.py's named tolerances.
. tests/lib.sh
FAMILIES_SET=volume
export FAMILIES_SET
. tests/integration/onnx_families.sh
