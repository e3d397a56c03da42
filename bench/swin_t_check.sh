# torchvision 0.14's swin_t at 224x224 (issue 44): get_model('swin_t', weights=None,
# num_classes=10) exported by the Python client's export_module (training form; stochastic
# depth as ai.pacer:StochasticDepth) and accepted by `pacer-worker --check-onnx`, which
# prints the catalog's figures (27.5 M parameters). make test's onnx_transformers_224
# checks the same import; this prints the export's time (30 s on a quiet machine, 100 s
# on a loaded 2-core one: torch traces 12 blocks of shifted-window attention) and the
# whole --check-onnx output (tests/integration/onnx_swin.sh checks a two-stage
# SwinTransformer against torch in full).
# Usage: sh bench/swin_t_check.sh [BUILD]
set -eu
BUILD=${1:-build}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
/usr/bin/python3 - "$TMP/swin_t.onnx" <<'PY'
import sys, time
sys.path.insert(0, "clients/python")
import torch, torchvision
from pacer.client import export_module
t = time.time()
net = torchvision.models.get_model("swin_t", weights=None, num_classes=10)
open(sys.argv[1], "wb").write(export_module(net, torch.zeros(1, 3, 224, 224)))
print("swin_t: exported in %.1f s" % (time.time() - t))
PY
start=$(date +%s)
"$BUILD/pacer-worker" --check-onnx "$TMP/swin_t.onnx"
echo
echo "swin_t: --check-onnx accepted it in $(($(date +%s) - start)) s"
