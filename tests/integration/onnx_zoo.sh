# Networks of the user's own, of the families people train (issue 25): LeNet-5, a VGG-style
# net with batch norm and dropout, a ResNet with projection shortcuts, depthwise-separable
# blocks and DenseNet-style concatenation, exported from PyTorch as a user would for
# training (tests/tools/onnx_export.py --zoo: training mode, no constant folding). Each
# trains on an MNIST subset (one epoch of 2048 images, batch 16) with sgd, ssgd (2 ranks)
# and asgd (a parameter server and 2 workers, taking pushes in worker order so that the
# run is repeatable) through pacer-worker: every run finishes with finite losses and a test
# accuracy far above chance (10%; the runs give 0.4 to 0.9), and sgd's loss falls. The sgd run's --export-onnx passes tests/tools/onnx_check.py
# (onnx.checker full_check, the source's initializers, inference form), and its weights
# loaded back into the PyTorch module (load_state_dict) give pacer's test accuracy within
# 0.1 point and pacer's predictions on at least 99.9% of the test images.
# Dropout masks across a resume (checkpoint format 5 keeps each worker's dropout step):
# VggBN (dropout) with sgd stopped after one epoch of two and resumed ends bit for bit as
# the uninterrupted run; with asgd, every checkpoint's per-worker dropout steps add up to
# the parameter server's updates (each push one forward, each applied), before and after a
# resume, which a worker restarting its count at the global step would break.
. tests/lib.sh
need_dir "$PACER_SHARED/datasets/mnist" "MNIST"
$TORCH_PY tests/tools/onnx_export.py --zoo "$TMP" >"$TMP/export.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "torch/onnx not importable by /usr/bin/python3 ($(tail -1 "$TMP/export.log"))"
[ $rc -eq 0 ] || { cat "$TMP/export.log"; fail "tests/tools/onnx_export.py --zoo exited $rc"; }

NETS="LeNet5 VggBN ResNetProj DwSep DenseCat"
TEST_N=1000 # 0.1 point is one image
# spec ONNX ALGORITHM WORKERS LR > FILE
spec() {
    jq -n --arg onnx "$1" --arg alg "$2" --argjson w "$3" --argjson lr "$4" --arg p "$PACER_SHARED/datasets/mnist" \
        --argjson t $TEST_N \
        '{model: {onnx: $onnx}, dataset: {name: "mnist", path: $p, train_subset: 2048, test_subset: $t},
          algorithm: {name: $alg}, workers: $w, batch_size: 16, epochs: 1, seed: 3, device: "cpu", threads: 1,
          optimizer: {lr: $lr, momentum: 0.9}, log_every: 1}'
}
# trained NET ALG ACCURACY_MIN: the run's summary has finite numbers and that accuracy
trained() {
    s="$TMP/$1.$2.out"
    need_number "$1 $2 train loss" "$(json "$s" .train_loss)"
    need_number "$1 $2 test loss" "$(json "$s" .test_loss)"
    at_least "$1 $2 test accuracy" "$(json "$s" .test_accuracy)" "$3"
}

$TORCH_PY tests/tools/onnx_check.py --images "$PACER_SHARED/datasets/mnist" $TEST_N "$TMP" ||
    fail "onnx_check.py --images failed"
set --
for net in $NETS; do
    f="$TMP/$net.onnx"
    # the networks with batch norm after every convolution take a larger step; the
    # parameter server's updates, stale, a smaller one
    case $net in LeNet5 | VggBN) lr=0.02 ;; *) lr=0.05 ;; esac
    spec "$f" sgd 1 $lr >"$TMP/$net.sgd.json"
    $WORKER --spec "$TMP/$net.sgd.json" --summary "$TMP/$net.sgd.out" --export-onnx "$TMP/$net.trained.onnx" \
        >"$TMP/$net.sgd.log" 2>&1 || { tail -20 "$TMP/$net.sgd.log"; fail "$net: sgd failed"; }
    # the loss fell: the mean of the first 8 steps' and of the last 8 (of 128)
    losses=$(sed -n 's/^epoch 1\/1 step [0-9]*\/128 loss \([^ ]*\) .*/\1/p' "$TMP/$net.sgd.log")
    [ "$(echo "$losses" | wc -l)" -eq 128 ] || { cat "$TMP/$net.sgd.log"; fail "$net: expected 128 step lines"; }
    first=$(echo "$losses" | head -8 | awk '{s += $1} END {print s / 8}')
    last=$(echo "$losses" | tail -8 | awk '{s += $1} END {print s / 8}')
    at_most "$net sgd: mean loss of the last 8 steps (first 8: $first)" "$last" "$(echo "$first" | awk '{print $1 * 0.7}')"
    trained "$net" sgd 0.5

    spec "$f" ssgd 2 $lr >"$TMP/$net.ssgd.json"
    $MPIRUN -np 2 $WORKER --spec "$TMP/$net.ssgd.json" --summary "$TMP/$net.ssgd.out" >"$TMP/$net.ssgd.log" 2>&1 ||
        { tail -20 "$TMP/$net.ssgd.log"; fail "$net: ssgd failed"; }
    trained "$net" ssgd 0.5

    spec "$f" asgd 2 0.02 >"$TMP/$net.asgd.json"
    $MPIRUN -np 3 $WORKER --spec "$TMP/$net.asgd.json" --summary "$TMP/$net.asgd.out" --ps-round-robin \
        >"$TMP/$net.asgd.log" 2>&1 ||
        { tail -20 "$TMP/$net.asgd.log"; fail "$net: asgd failed"; }
    trained "$net" asgd 0.3

    # the export, for the checks below: pacer's logits of it
    $BUILD/tools/onnx_logits "$TMP/$net.trained.onnx" "$TMP/x.bin" $TEST_N "$TMP/$net.logits.bin" ||
        fail "$net: onnx_logits failed"
    mkdir -p "$TMP/$net"
    # onnx_check.py's arguments for this network, after the others' (the positional
    # parameters hold the list)
    [ $# -gt 0 ] && set -- "$@" --
    set -- "$@" "$TMP/$net.trained.onnx" "$f" "$PACER_SHARED/datasets/mnist" $TEST_N "$TMP/$net" --module "$net" \
        --pacer-logits "$TMP/$net.logits.bin"
done

# every export checked, and its weights back in the PyTorch module (one process: torch
# is imported once)
$TORCH_PY tests/tools/onnx_check.py "$@" || fail "tests/tools/onnx_check.py refused an exported model"
for net in $NETS; do
    at_most "$net: |torch accuracy - pacer's|" \
        "$(jq -n --slurpfile t "$TMP/$net/torch.json" --slurpfile s "$TMP/$net.sgd.out" \
            '($t[0].accuracy - $s[0].test_accuracy) | fabs')" 0.00101 # one image
    at_most "$net: images torch and pacer predict differently (of $TEST_N)" \
        "$(json "$TMP/$net/torch.json" .predictions_differ)" 1
done

# rspec NAME ALGORITHM WORKERS > FILE: VggBN, 2 epochs of 512 images, a checkpoint every 8 steps
rspec() {
    jq -n --arg n "$1" --arg onnx "$TMP/VggBN.onnx" --arg alg "$2" --argjson w "$3" --arg d "$TMP/ck.$1" \
        --arg p "$PACER_SHARED/datasets/mnist" \
        '{name: $n, model: {onnx: $onnx}, dataset: {name: "mnist", path: $p, train_subset: 512, test_subset: 200},
          algorithm: {name: $alg}, workers: $w, batch_size: 16, epochs: 2, seed: 5, device: "cpu", threads: 1,
          optimizer: {lr: 0.02, momentum: 0.9}, log_every: 0, checkpoint: {every_steps: 8, dir: $d}}'
}
rspec whole sgd 1 >"$TMP/whole.json"
rspec halves sgd 1 >"$TMP/halves.json"
$WORKER --spec "$TMP/whole.json" >"$TMP/whole.log" 2>&1 || { tail "$TMP/whole.log"; fail "sgd, 2 epochs, failed"; }
$WORKER --spec "$TMP/halves.json" --stop-after-steps 32 >"$TMP/half1.log" 2>&1 ||
    { tail "$TMP/half1.log"; fail "sgd, stopped after an epoch, failed"; }
$WORKER --spec "$TMP/halves.json" --resume >"$TMP/half2.log" 2>&1 || { tail "$TMP/half2.log"; fail "sgd resume failed"; }
grep -q "resumed from .* at step 32" "$TMP/half2.log" || { cat "$TMP/half2.log"; fail "sgd did not resume at step 32"; }
cmp "$TMP/ck.whole/whole.ckpt" "$TMP/ck.halves/halves.ckpt" ||
    fail "VggBN (dropout), sgd: 1 epoch + resume + 1 epoch differs from 2 epochs"
echo "ok: VggBN (dropout), sgd: 1 epoch + resume + 1 epoch == 2 epochs, bit for bit"

# field CKPT NAME: one header field (tests/tools/ckpt_patch reads it)
field() { $BUILD/tools/ckpt_patch "$1" "$2" || fail "ckpt_patch cannot read $2 of $1"; }
# dropout_adds_up CKPT WHAT: both workers' dropout steps >= 1, summing to the updates
dropout_adds_up() {
    g=$(field "$1" global_step) d0=$(field "$1" "dropout_step[0]") d1=$(field "$1" "dropout_step[1]")
    at_least "$2: worker 0's dropout step" "$d0" 1
    at_least "$2: worker 1's dropout step" "$d1" 1
    equals_num "$2: the workers' dropout steps, summed (the updates: $g)" "$((d0 + d1))" "$g"
}
rspec async asgd 2 >"$TMP/async.json"
$MPIRUN -np 3 $WORKER --spec "$TMP/async.json" --ps-round-robin --stop-after-steps 24 >"$TMP/async1.log" 2>&1 ||
    { tail "$TMP/async1.log"; fail "asgd, stopped after 24 updates, failed"; }
ck="$TMP/ck.async/async.ckpt"
equals_num "asgd checkpoint's updates" "$(field "$ck" global_step)" 24
dropout_adds_up "$ck" "asgd at update 24"
w0=$(field "$ck" "dropout_step[0]") w1=$(field "$ck" "dropout_step[1]")
$MPIRUN -np 3 $WORKER --spec "$TMP/async.json" --ps-round-robin --resume >"$TMP/async2.log" 2>&1 ||
    { tail "$TMP/async2.log"; fail "asgd resume failed"; }
grep -q "resumed from .* at step 24" "$TMP/async2.log" || { cat "$TMP/async2.log"; fail "asgd did not resume at 24"; }
at_least "asgd, after the resume: updates" "$(field "$ck" global_step)" 40
dropout_adds_up "$ck" "asgd after the resume"
at_least "asgd: worker 0's dropout step went on from $w0" "$(field "$ck" "dropout_step[0]")" "$w0"
at_least "asgd: worker 1's dropout step went on from $w1" "$(field "$ck" "dropout_step[1]")" "$w1"
echo "ok"
