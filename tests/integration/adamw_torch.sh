# AdamW against PyTorch (issue 44): a small network exported by torch
# (tests/tools/adamw_torch.py: convolution, two Linear layers, every layer with a bias)
# trained 6 ssgd steps on 2 ranks with optimizer.kind adamw (weight decay 0.5, betas
# [0.9, 0.99]), loss.label_smoothing 0.1 and the default parameter groups (biases without
# weight decay) gives the losses and weights of torch.optim.AdamW with the same groups and
# CrossEntropyLoss(label_smoothing=0.1) from the same weights, within adamw_torch.py's
# named tolerances; its biases are shown to differ from a run that decays them. Each step is
# the whole 64-image set (2 x 32), so the gradient does not depend on which rank drew which
# image. Then the same job stopped after 3 steps and resumed (checkpoint format 7: the
# step count and both moments) ends bit for bit where the uninterrupted run does: the two
# final checkpoints are the same bytes (weights, both moments, opt_step; tests/tools/
# ckpt_diff builds catalog models only) and so are the two exported models.
. tests/lib.sh
/usr/bin/python3 tests/tools/adamw_torch.py --export "$TMP" >"$TMP/export.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/export.log")"
[ $rc -eq 0 ] || { cat "$TMP/export.log"; fail "tests/tools/adamw_torch.py --export exited $rc"; }

# spec NAME CHECKPOINT-DIR > FILE
spec() {
    jq -n --arg name "$1" --arg onnx "$TMP/adamw_net.onnx" --arg data "$TMP/data.npz" --arg dir "$2" \
        '{name: $name, model: {onnx: $onnx}, dataset: {path: $data, format: "npz", mean: [0], std: [1]},
          algorithm: {name: "ssgd"}, workers: 2, batch_size: 32, epochs: 6, seed: 1, device: "cpu", log_every: 0,
          optimizer: {kind: "adamw", lr: 0.01, weight_decay: 0.5, betas: [0.9, 0.99]},
          loss: {label_smoothing: 0.1}, checkpoint: {every_steps: 1, dir: $dir}}'
}
mpi() { # LOG ARGS...
    log=$1
    shift
    $MPIRUN -np 2 $WORKER "$@" >"$log" 2>&1 || { tail -20 "$log"; fail "mpirun -np 2 pacer-worker $* failed"; }
}

spec aw "$TMP/full" >"$TMP/full.json"
mpi "$TMP/full.log" --spec "$TMP/full.json" --metrics "$TMP/full.jsonl" --export-onnx "$TMP/trained.onnx"
/usr/bin/python3 tests/tools/adamw_torch.py --check "$TMP" "$TMP/full.jsonl" "$TMP/trained.onnx" 6 0.01 0.5 0.9 0.99 0.1 ||
    fail "pacer's AdamW differs from torch.optim.AdamW (above)"
echo "ok: 6 ssgd steps on 2 ranks with adamw, label smoothing and no-decay biases give torch's losses and weights"

spec aw "$TMP/cut" >"$TMP/cut.json"
mpi "$TMP/cut1.log" --spec "$TMP/cut.json" --stop-after-steps 3
mpi "$TMP/cut2.log" --spec "$TMP/cut.json" --resume --export-onnx "$TMP/resumed.onnx"
grep -q "resumed from .* at step 3" "$TMP/cut2.log" || { cat "$TMP/cut2.log"; fail "the adamw run did not resume at step 3"; }
cmp "$TMP/full/aw.ckpt" "$TMP/cut/aw.ckpt" || fail "adamw stopped at step 3 and resumed differs from the uninterrupted run"
cmp "$TMP/trained.onnx" "$TMP/resumed.onnx" || fail "the resumed run exported other weights than the uninterrupted one"
echo "ok: adamw stopped at step 3 and resumed ends bit for bit where the uninterrupted run does (both moments, step 6)"
