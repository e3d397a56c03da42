# A network of the user's own, "model": {"onnx": PATH} (issue 25): a small CNN with batch
# norm and dropout, exported by PyTorch at test time (tests/tools/onnx_export.py --mnist),
# trains on MNIST with 2 ranks of ssgd and its loss falls; an asynchronous algorithm and
# pacer-sim train it too; a missing file, a file that is not ONNX, an unsupported operator
# and a model of the wrong width are refused before training, each naming what is wrong.
# --export-onnx gives the trained model back: onnx.checker (full_check) accepts it, and
# onnxruntime-node (tests/onnxrt, make deps) gives pacer's logits within 1e-4 on 512 test
# images, the same predictions, and the test accuracy pacer reported; loaded back into the
# PyTorch module (load_state_dict), the weights give that accuracy in torch.
. tests/lib.sh
need_dir "$PACER_SHARED/datasets/mnist" "MNIST"
$TORCH_PY tests/tools/onnx_export.py --mnist "$TMP" >"$TMP/export.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "torch/onnx not importable by /usr/bin/python3 ($(tail -1 "$TMP/export.log"))"
[ $rc -eq 0 ] || { cat "$TMP/export.log"; fail "tests/tools/onnx_export.py --mnist exited $rc"; }

# spec ONNX ALGORITHM WORKERS TRAIN_SUBSET > FILE
spec() {
    jq -n --arg onnx "$1" --arg alg "$2" --argjson w "$3" --argjson n "$4" --arg p "$PACER_SHARED/datasets/mnist" \
        '{model: {onnx: $onnx}, dataset: {name: "mnist", path: $p, train_subset: $n, test_subset: 512},
          algorithm: {name: $alg}, workers: $w, batch_size: 32, epochs: 1, seed: 3, device: "cpu",
          optimizer: {lr: 0.05, momentum: 0.9}, log_every: 1}'
}

spec "$TMP/mnist_cnn.onnx" ssgd 2 2048 >"$TMP/ssgd.json"
$MPIRUN -np 2 $WORKER --spec "$TMP/ssgd.json" --summary "$TMP/ssgd.out" --export-onnx "$TMP/trained.onnx" \
    >"$TMP/ssgd.log" 2>&1 ||
    { tail -20 "$TMP/ssgd.log"; fail "ssgd on the imported model failed"; }
grep -q "^training mnist_cnn.onnx on mnist with ssgd" "$TMP/ssgd.log" ||
    { head "$TMP/ssgd.log"; fail "the log does not name the imported model"; }
# the mean loss of the first 4 steps and of the last 4 (of 32)
losses=$(sed -n 's/^epoch 1\/1 step [0-9]*\/32 loss \([^ ]*\) .*/\1/p' "$TMP/ssgd.log")
[ "$(echo "$losses" | wc -l)" -eq 32 ] || { cat "$TMP/ssgd.log"; fail "expected 32 step lines"; }
first=$(echo "$losses" | head -4 | awk '{s += $1} END {print s / 4}')
last=$(echo "$losses" | tail -4 | awk '{s += $1} END {print s / 4}')
echo "loss: first 4 steps $first, last 4 steps $last"
at_most "mean loss of the last 4 steps" "$last" "$(echo "$first" | awk '{print $1 * 0.7}')"
at_least "test accuracy after 32 steps" "$(json "$TMP/ssgd.out" .test_accuracy)" 0.5

# the trained model as ONNX, checked by onnx's checker and by an independent runtime
$TORCH_PY tests/tools/onnx_check.py "$TMP/trained.onnx" "$TMP/mnist_cnn.onnx" "$PACER_SHARED/datasets/mnist" \
    512 "$TMP" || fail "tests/tools/onnx_check.py refused the exported model"
# the trained weights back in the PyTorch module (load_state_dict): the accuracy pacer
# reported, within one image of the 512 (torch's kernels sum in another order)
at_most "|torch accuracy - pacer's|" \
    "$(jq -n --slurpfile t "$TMP/torch.json" --slurpfile s "$TMP/ssgd.out" '($t[0].accuracy - $s[0].test_accuracy) | fabs')" 0.002
$BUILD/tools/onnx_logits "$TMP/trained.onnx" "$TMP/x.bin" 512 "$TMP/pacer_logits.bin" || fail "onnx_logits failed"
if command -v node >/dev/null 2>&1 && [ -d tests/onnxrt/node_modules/onnxruntime-node ]; then
    node tests/onnxrt/logits.mjs "$TMP/trained.onnx" "$TMP/x.bin" 512 1x28x28 "$TMP/pacer_logits.bin" \
        "$TMP/labels.bin" >"$TMP/ort.json" || fail "onnxruntime-node could not run the exported model"
    echo "onnxruntime-node: $(cat "$TMP/ort.json")"
    at_most "largest logit difference, relative" "$(json "$TMP/ort.json" .max_rel_diff)" 1e-4
    equals_num "predictions that differ" "$(json "$TMP/ort.json" .predictions_differ)" 0
    at_most "|onnxruntime accuracy - pacer's|" \
        "$(jq -n --slurpfile o "$TMP/ort.json" --slurpfile s "$TMP/ssgd.out" '($o[0].accuracy - $s[0].test_accuracy) | fabs')" 1e-6
else
    echo "note: onnxruntime-node not installed (make deps installs it into tests/onnxrt): runtime check not run"
fi

# an asynchronous algorithm: a parameter server and 2 workers
spec "$TMP/mnist_cnn.onnx" asgd 2 512 >"$TMP/asgd.json"
$MPIRUN -np 3 $WORKER --spec "$TMP/asgd.json" --summary "$TMP/asgd.out" --export-onnx "$TMP/asgd_trained.onnx" \
    >"$TMP/asgd.log" 2>&1 || { tail -20 "$TMP/asgd.log"; fail "asgd on the imported model failed"; }
need_number "asgd test accuracy" "$(json "$TMP/asgd.out" .test_accuracy)"
# The parameter server runs no training forward: its batch-norm running statistics are
# the workers' (each push carries them, worker/ps.c), not the file's initial ones.
$TORCH_PY - "$TMP/mnist_cnn.onnx" "$TMP/asgd_trained.onnx" <<'PY' || fail "asgd: the parameter server kept the initial batch-norm statistics"
import sys
import numpy as np
import onnx
from onnx import numpy_helper
src, out = ({t.name: numpy_helper.to_array(t) for t in onnx.load(f).graph.initializer} for f in sys.argv[1:3])
stats = [k for k in src if k.endswith(("running_mean", "running_var"))]
same = [k for k in stats if np.array_equal(src[k], out[k])]
print("asgd export: %d batch-norm statistics, %d unchanged from the file" % (len(stats), len(same)))
sys.exit(1 if not stats or same else 0)
PY

# dynamic batching and an elastic restart: 2 ranks (one 3x slower) with dynamic batches,
# stopped after a checkpoint, resumed with 1 rank (--world 1, as after a lost host)
spec "$TMP/mnist_cnn.onnx" ssgd 2 2048 |
    jq --arg d "$TMP/ck-el" '.algorithm.dynamic_batch = true | .emulate.slowdown = [1, 3] |
        .checkpoint = {every_steps: 8, dir: $d}' >"$TMP/el.json"
$MPIRUN -np 2 $WORKER --spec "$TMP/el.json" --world 2 --stop-after-steps 20 >"$TMP/el.1" 2>&1 ||
    { tail -20 "$TMP/el.1"; fail "ssgd with dynamic batches on the imported model failed"; }
$MPIRUN -np 1 $WORKER --spec "$TMP/el.json" --world 1 --resume --summary "$TMP/el.out" >"$TMP/el.2" 2>&1 ||
    { tail -20 "$TMP/el.2"; fail "the imported model's checkpoint did not resume with 1 rank"; }
grep -q "resumed from .* at step [1-9]" "$TMP/el.2" || { cat "$TMP/el.2"; fail "the imported model did not resume"; }
grep -q "written by 2 workers; resuming with 1" "$TMP/el.2" || { cat "$TMP/el.2"; fail "no line saying the world changed"; }
at_least "test accuracy after 2 -> 1 ranks" "$(json "$TMP/el.out" .test_accuracy)" 0.5
echo "ok: dynamic batches on 2 ranks, checkpoint resumed on 1: $(grep -m1 'written by 2 workers' "$TMP/el.2")"

# refusals, exit status 2, before any training
spec "$TMP/none.onnx" ssgd 1 256 >"$TMP/missing.json"
expect_error 2 "model.onnx: cannot open $TMP/none.onnx: No such file" $WORKER --spec "$TMP/missing.json"
jq -n --arg p "$PACER_SHARED/datasets/mnist" '{model: "lenet5", dataset: {name: "mnist", path: $p}}' >"$TMP/lenet5.json"
expect_error 1 "export-onnx: onnx: cannot write $TMP/no/such/dir/x.onnx" \
    $WORKER --spec "$TMP/lenet5.json" --export-onnx-init "$TMP/no/such/dir/x.onnx"
echo "not a model" >"$TMP/text.onnx"
spec "$TMP/text.onnx" ssgd 1 256 >"$TMP/text.json"
expect_error 2 "model.onnx: $TMP/text.onnx: not an ONNX model" $WORKER --spec "$TMP/text.json"
spec "$TMP/mnist_softplus.onnx" ssgd 1 256 >"$TMP/softplus.json"
expect_error 2 "operator Softplus is not supported (\`pacer-worker --list-ops\` lists the operators that import" \
    $WORKER --spec "$TMP/softplus.json"
spec "$TMP/mnist7.onnx" ssgd 1 256 >"$TMP/seven.json"
expect_error 2 "model: mnist7.onnx has 7 outputs (classes), dataset.name mnist has 10 classes" \
    $WORKER --spec "$TMP/seven.json"

# pacer-sim reads the spec (and imports the file) itself, then its simulated worker trains
if command -v smpirun >/dev/null 2>&1 && [ -x "${SMPI_BUILD:-build-smpi}/pacer-worker" ]; then
    spec "$TMP/mnist_cnn.onnx" ssgd 2 256 >"$TMP/sim.json"
    $BUILD/pacer-sim --spec "$TMP/sim.json" --summary "$TMP/sim.out" >"$TMP/sim.log" 2>&1 ||
        { tail -20 "$TMP/sim.log"; fail "pacer-sim on the imported model failed"; }
    need_number "pacer-sim test accuracy" "$(json "$TMP/sim.out" .test_accuracy)"
    expect_error 2 "model.onnx: cannot open $TMP/none.onnx" $BUILD/pacer-sim --spec "$TMP/missing.json" --summary "$TMP/missing.out"
else
    echo "note: pacer-sim part not run (no smpirun or ${SMPI_BUILD:-build-smpi}/pacer-worker)"
fi
echo "ok"
