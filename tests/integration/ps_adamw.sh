# AdamW at the parameter server (issue 44). n-softsync with n = 1 is hard-sync (it
# aggregates all three workers' gradients before each update), so with optimizer.kind
# adamw it gives ssgd's AdamW run: after 20 updates the weights, both moments and the step
# count agree (ckpt_diff within 1e-5, summation order the only difference; ps_version left
# out: the server's update count on one side, 0 for ssgd): the server applies AdamW with
# its own moments and bias corrections. Stopped at update 10 and resumed (pushes in worker
# order: exact), it ends bit for bit where the uninterrupted run does: the moments and the
# step count come back from the server's checkpoint. asgd with adamw trains an epoch to a
# finite loss. (ddc-asgd refuses adamw: test_spec and http_api check the message.)
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
DIFF=$BUILD/tools/ckpt_diff
spec() { # FILE ALGORITHM DIR
    cat >"$TMP/$1.json" <<JSON
{"name": "aw", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 4800, "test_subset": 200},
 "algorithm": {"name": "$2", "n": 1}, "workers": 3, "batch_size": 32, "epochs": 1, "seed": 3, "log_every": 0,
 "optimizer": {"kind": "adamw", "lr": 0.002, "weight_decay": 0.05, "betas": [0.9, 0.99]},
 "checkpoint": {"every_steps": 10, "dir": "$3"}}
JSON
}
spec ssgd ssgd "$TMP/ssgd"
spec full nsoftsync "$TMP/full"
spec cut nsoftsync "$TMP/cut"
mpi 3 "$TMP/ssgd.log" --spec "$TMP/ssgd.json" --stop-after-steps 20
mpi 4 "$TMP/full.log" --spec "$TMP/full.json" --ps-round-robin --stop-after-steps 20
"$DIFF" --ignore ps_version "$TMP/ssgd/aw.ckpt" "$TMP/full/aw.ckpt" 1e-5 >"$TMP/eq.txt" 2>&1 ||
    { cat "$TMP/eq.txt"; fail "n-softsync (n = 1) with adamw at the server differs from ssgd with adamw"; }
grep -q "opt_step: 20 vs 20" "$TMP/eq.txt" || { cat "$TMP/eq.txt"; fail "the server's AdamW step count is not 20"; }
echo "ok: the parameter server's AdamW (n-softsync, n = 1) gives ssgd's weights, moments and step count"

mpi 4 "$TMP/cut1.log" --spec "$TMP/cut.json" --ps-round-robin --stop-after-steps 10
mpi 4 "$TMP/cut2.log" --spec "$TMP/cut.json" --ps-round-robin --resume --stop-after-steps 20
grep -q "resumed from .* at step 10" "$TMP/cut2.log" || { cat "$TMP/cut2.log"; fail "n-softsync did not resume at update 10"; }
"$DIFF" "$TMP/full/aw.ckpt" "$TMP/cut/aw.ckpt" 0 ||
    fail "n-softsync with adamw stopped at update 10 and resumed differs from the uninterrupted run"
echo "ok: the server's AdamW moments and step count come back from its checkpoint (bit for bit)"

spec asgd asgd "$TMP/asgd"
mpi 4 "$TMP/asgd.log" --spec "$TMP/asgd.json" --summary "$TMP/asgd.out"
loss=$(json "$TMP/asgd.out" .train_loss)
is_number "$loss" || { cat "$TMP/asgd.out"; fail "asgd with adamw: no final training loss ($loss)"; }
echo "ok: asgd with adamw trains an epoch (final training loss $loss)"
