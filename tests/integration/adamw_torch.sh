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
# ckpt_diff builds catalog models only) and so are the two exported models. An elastic
# restart from step 3 on 1 rank (--world 1: one worker takes the whole batch of 64) goes on
# with the moments and step count: its losses after steps 4 to 6 are the 2-rank run's
# within adamw_torch.py's LOSS_TOL (the same mean gradient, summed in another order).
. tests/lib.sh
$TORCH_PY tests/tools/adamw_torch.py --export "$TMP" >"$TMP/export.log" 2>&1
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
$TORCH_PY tests/tools/adamw_torch.py --check "$TMP" "$TMP/full.jsonl" "$TMP/trained.onnx" 6 0.01 0.5 0.9 0.99 0.1 ||
    fail "pacer's AdamW differs from torch.optim.AdamW (above)"
echo "ok: 6 ssgd steps on 2 ranks with adamw, label smoothing and no-decay biases give torch's losses and weights"

spec aw "$TMP/cut" >"$TMP/cut.json"
mpi "$TMP/cut1.log" --spec "$TMP/cut.json" --stop-after-steps 3
mpi "$TMP/cut2.log" --spec "$TMP/cut.json" --resume --export-onnx "$TMP/resumed.onnx"
grep -q "resumed from .* at step 3" "$TMP/cut2.log" || { cat "$TMP/cut2.log"; fail "the adamw run did not resume at step 3"; }
cmp "$TMP/full/aw.ckpt" "$TMP/cut/aw.ckpt" || fail "adamw stopped at step 3 and resumed differs from the uninterrupted run"
cmp "$TMP/trained.onnx" "$TMP/resumed.onnx" || fail "the resumed run exported other weights than the uninterrupted one"
echo "ok: adamw stopped at step 3 and resumed ends bit for bit where the uninterrupted run does (both moments, step 6)"

spec aw "$TMP/el" >"$TMP/el.json"
mpi "$TMP/el1.log" --spec "$TMP/el.json" --world 2 --stop-after-steps 3
$MPIRUN -np 1 $WORKER --spec "$TMP/el.json" --world 1 --resume --metrics "$TMP/el.jsonl" >"$TMP/el2.log" 2>&1 ||
    { tail -20 "$TMP/el2.log"; fail "the elastic resume on 1 rank failed"; }
grep -q "written by 2 workers; resuming with 1" "$TMP/el2.log" || { cat "$TMP/el2.log"; fail "no line saying the world changed"; }
losses() { jq -r 'select(.kind == "epoch" and .rank == 0) | .test_loss' "$1" | tail -3; }
losses "$TMP/full.jsonl" >"$TMP/full.losses"
losses "$TMP/el.jsonl" >"$TMP/el.losses"
n=0
for pair in $(paste -d: "$TMP/full.losses" "$TMP/el.losses"); do
    a=${pair%%:*} b=${pair##*:}
    need_number "2-rank loss" "$a"
    need_number "elastic loss" "$b"
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * a) }' ||
        fail "after the elastic restart: loss $b, the 2-rank run's $a (over 1e-5 relative)"
    n=$((n + 1))
done
equals_num "losses compared after the elastic restart" "$n" 3
echo "ok: an elastic restart on 1 rank goes on with the moments: losses after steps 4 to 6 are the 2-rank run's"
