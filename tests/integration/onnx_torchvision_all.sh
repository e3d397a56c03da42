# onnx_torchvision.sh's checks on all six of torchvision's post-2017 networks (make test
# runs three of them): make test-slow (tests/run.sh's SLOW_SUITE).
TV_ALL=1
export TV_ALL
. tests/integration/onnx_torchvision.sh
