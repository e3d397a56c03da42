# The Python client (clients/python/pacer, issue 25) against a real coordinator: a
# PyTorch module becomes a job (export, upload, submit), trains, and its weights come back
# into the module, which then gives pacer's test accuracy in torch; refusals come back as
# exceptions carrying the API's message (tests/tools/pyclient_train.py). Issue 42: a batch
# of 1 as example input, no torch warnings on stderr, no upload left by a refused job,
# num_batches_tracked in a strict state_dict.
. tests/integration/coordinator_lib.inc
MNIST=$PACER_SHARED/datasets/mnist
need_dir "$MNIST" "MNIST (../shared/datasets/mnist)"
$TORCH_PY -c 'import torch, onnx, numpy' 2>/dev/null || skip "python3-torch, python3-onnx and python3-numpy are needed (make deps)"

TOKEN=test-token-$$
export PACER_TOKEN=$TOKEN
ROOT=$(realpath "$PACER_SHARED/datasets")
start_coord --data-root "$ROOT"
BASE=$(grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')
[ -n "$BASE" ] || fail "the coordinator did not say where it serves"

PYTHONPATH=clients/python $TORCH_PY tests/tools/pyclient_train.py "$BASE" "$TOKEN" "$ROOT/mnist"
rc=$?
[ $rc -eq 77 ] && skip "tests/tools/pyclient_train.py: torch/onnx not importable"
[ $rc -eq 0 ] || { echo "--- coordinator log"; tail -30 "$TMP/coord.log"; fail "the Python client's checks failed (exit $rc)"; }
echo "ok: the Python client trains a module and gives its weights back"
