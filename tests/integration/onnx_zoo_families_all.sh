# onnx_zoo_families.sh's checks on the whole zoo: the eight networks trained on 2 ranks
# (against torch, through onnxruntime and reloaded) and the eight older ones accepted by
# --check-onnx at the smallest input each takes. make test-slow (tests/run.sh's SLOW_SUITE);
# make test runs two of them.
ZOO_ALL=1
export ZOO_ALL
. tests/integration/onnx_zoo_families.sh
