# Resume under MPI, for every algorithm family, and ranks that do not see the same
# checkpoint (issue 18):
#   1. ssgd on 3 ranks with unequal batches 16, 32, 48 (--batch-plan), stopped at step 20
#      and resumed WITHOUT --batch-plan: the plan comes back from the checkpoint and the
#      run ends bit for bit where an uninterrupted one does (ckpt_diff, tolerance 0).
#   2. The parameter-server family: hard-sync n-softsync (n = 1, pushes in worker order)
#      stopped at update 20 and resumed ends bit for bit where an uninterrupted run does:
#      the PS's version, position and optimizer state come back. asgd (pushes in worker
#      order, batches 16, 32, 48) resumes at its version: the first update after the
#      resume is 21, every worker keeps its batch from the saved plan, and at most one
#      range per other worker (in flight at the stop) is lost.
#   3. hpsgd stopped mid-round (rounds of 3 local steps, stopped at step 22): every rank
#      resumes from rank 0's weights (identical digests when the resumed loop starts),
#      and the job runs its remaining steps and ends with the same weights on every rank.
#   4. A rank that cannot see the checkpoint rank 0 resumes from (its checkpoint.dir is
#      relative and it runs elsewhere) stops the job with exit 2 and a line naming the rank
#      and the file, instead of starting fresh beside resumed ranks; ranks whose copies
#      of the checkpoint are at different steps stop it too.
#   5. A run resumed from the checkpoint written after its last epoch end (what an elastic
#      relaunch gets when a host is lost as the job finishes) has nothing left to train:
#      sgd, ssgd and asgd report the finished run's test figures and train_loss (not
#      zeros), train_loss_running null without calling it diverged, and the parameter
#      server hands out no further epoch. Both attempts' records carry one evaluation per
#      epoch end (rank 0's; the workers' records none) and one of the restored weights.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
DIFF=$BUILD/tools/ckpt_diff
spec() { # NAME ALGORITHM WORKERS DIR [EXTRA-ALGORITHM-JSON]
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 4800, "test_subset": 200},
 "algorithm": {"name": "$2", "n": 1, "max_batch": 96${5:-}}, "workers": $3, "batch_size": 32, "epochs": 1, "seed": 3,
 "log_every": 0, "optimizer": {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.0005},
 "checkpoint": {"every_steps": 10, "dir": "$4"}}
JSON
}

# 1. ssgd with a saved batch plan.
spec full ssgd 3 "$TMP/full"
spec cut ssgd 3 "$TMP/cut"
mpi 3 "$TMP/full.log" --spec "$TMP/full.json" --batch-plan 16,32,48
mpi 3 "$TMP/cut1.log" --spec "$TMP/cut.json" --batch-plan 16,32,48 --stop-after-steps 20
mpi 3 "$TMP/cut2.log" --spec "$TMP/cut.json" --resume --metrics "$TMP/cut.jsonl"
grep -q "resumed from .* at step 20" "$TMP/cut2.log" || { cat "$TMP/cut2.log"; fail "ssgd did not resume at step 20"; }
[ "$(jq -s -c '[.[] | select(.kind == "step")] | group_by(.rank) | map(map(.batch) | unique)' "$TMP/cut.jsonl")" = "[[16],[32],[48]]" ] ||
    fail "the resumed ssgd run did not keep the saved plan 16, 32, 48"
"$DIFF" "$TMP/full/full.ckpt" "$TMP/cut/cut.ckpt" 0 || fail "ssgd stopped at 20 and resumed differs from the uninterrupted run"
echo "ok: ssgd resumed with its saved batch plan 16, 32, 48 ends bit for bit where the uninterrupted run does"

# 2. Parameter server: hard-sync n-softsync, exact.
spec nfull nsoftsync 3 "$TMP/nfull"
spec ncut nsoftsync 3 "$TMP/ncut"
mpi 4 "$TMP/nfull.log" --spec "$TMP/nfull.json" --ps-round-robin --summary "$TMP/nfull.out"
mpi 4 "$TMP/ncut1.log" --spec "$TMP/ncut.json" --ps-round-robin --stop-after-steps 20
mpi 4 "$TMP/ncut2.log" --spec "$TMP/ncut.json" --ps-round-robin --resume --summary "$TMP/ncut.out"
grep -q "resumed from .* at step 20" "$TMP/ncut2.log" || { cat "$TMP/ncut2.log"; fail "n-softsync did not resume at update 20"; }
equals_num "n-softsync updates, resumed vs uninterrupted" "$(json "$TMP/ncut.out" .parameter_server.updates)" \
    "$(json "$TMP/nfull.out" .parameter_server.updates)"
"$DIFF" "$TMP/nfull/nfull.ckpt" "$TMP/ncut/ncut.ckpt" 0 ||
    fail "n-softsync (n = 1) stopped at update 20 and resumed differs from the uninterrupted run"
echo "ok: the parameter server resumes its version, position and optimizer state: n-softsync (n = 1) bit for bit"

# asgd: version and per-worker batches.
spec afull asgd 3 "$TMP/afull"
spec acut asgd 3 "$TMP/acut"
mpi 4 "$TMP/afull.log" --spec "$TMP/afull.json" --ps-round-robin --batch-plan 16,32,48 --summary "$TMP/afull.out"
mpi 4 "$TMP/acut1.log" --spec "$TMP/acut.json" --ps-round-robin --batch-plan 16,32,48 --stop-after-steps 20
mpi 4 "$TMP/acut2.log" --spec "$TMP/acut.json" --ps-round-robin --resume --summary "$TMP/acut.out" --metrics "$TMP/acut.jsonl"
grep -q "resumed from .* at step 20" "$TMP/acut2.log" || { cat "$TMP/acut2.log"; fail "asgd did not resume at update 20"; }
first=$(jq -s '[.[] | select(.kind == "step" and .role == "ps") | .step] | min' "$TMP/acut.jsonl")
equals_num "asgd's first update after the resume" "$first" 21
[ "$(jq -s -c '[.[] | select(.kind == "step" and .role == "worker" and .batch > 0)] | group_by(.rank) | map(map(.batch) | unique)' "$TMP/acut.jsonl")" = "[[16],[32],[48]]" ] ||
    fail "asgd workers after the resume: $(jq -s -c '[.[] | select(.kind == "step" and .role == "worker")] | group_by(.rank) | map(map(.batch) | unique)' "$TMP/acut.jsonl"), want the saved plan"
full=$(json "$TMP/afull.out" .parameter_server.updates)
between "asgd updates, resumed (uninterrupted: $full)" "$(json "$TMP/acut.out" .parameter_server.updates)" $((full - 2)) "$full"
echo "ok: asgd resumed at version 20 (next update 21), each worker with its saved batch"

# 3. hpsgd mid-round.
spec hcut hpsgd 4 "$TMP/hcut"
sed -i 's/"every_steps": 10/"every_steps": 11/; s/"train_subset": 4800/"train_subset": 5120/' "$TMP/hcut.json"
mpi 4 "$TMP/hcut1.log" --spec "$TMP/hcut.json" --hpsgd-round-steps 3 --stop-after-steps 22
mpi 4 "$TMP/hcut2.log" --spec "$TMP/hcut.json" --hpsgd-round-steps 3 --resume --weight-digest "$TMP/hd" --summary "$TMP/hcut.out"
grep -q "resumed from .* at step 22" "$TMP/hcut2.log" || { cat "$TMP/hcut2.log"; fail "hpsgd did not resume at step 22"; }
head -1 "$TMP/hd.rank0" | grep -q '^22 [0-9a-f]* start$' || fail "hpsgd's resumed loop starts at $(head -1 "$TMP/hd.rank0"), want step 22"
sed -n 2p "$TMP/hd.rank0" | grep -q '^23 ' || fail "hpsgd's first step after the resume is $(sed -n 2p "$TMP/hd.rank0")"
for r in 1 2 3; do
    [ "$(head -1 "$TMP/hd.rank$r")" = "$(head -1 "$TMP/hd.rank0")" ] || fail "hpsgd rank $r resumed with other weights than rank 0"
done
equals_num "hpsgd steps after the resume" "$(json "$TMP/hcut.out" .steps)" 40
[ "$(cut -d' ' -f2 "$TMP/hd.rank0" | tail -1)" = "$(cut -d' ' -f2 "$TMP/hd.rank3" | tail -1)" ] || fail "hpsgd ranks differ at the end"
echo "ok: hpsgd stopped mid-round resumes on every rank from rank 0's weights and runs its remaining steps"

# 4. A rank without the checkpoint. checkpoint.dir is relative; each rank runs in its own
# directory (run.sh below), and only rank 0's holds the file.
mkdir -p "$TMP/r0" "$TMP/r1"
spec rel ssgd 2 ck
(cd "$TMP/r0" && $MPIRUN -np 2 "$OLDPWD/$WORKER" --spec "$TMP/rel.json" --stop-after-steps 10 >"$TMP/rel.log" 2>&1) ||
    { cat "$TMP/rel.log"; fail "the run that writes the checkpoint failed"; }
[ -s "$TMP/r0/ck/rel.ckpt" ] || fail "no checkpoint in $TMP/r0/ck"
cat >"$TMP/run.sh" <<SH
cd "$TMP/r\$OMPI_COMM_WORLD_RANK" && exec "$(pwd)/$WORKER" "\$@"
SH
expect_error 2 "rank 1: ck/rel.ckpt: cannot open checkpoint" $MPIRUN -np 2 sh "$TMP/run.sh" --spec "$TMP/rel.json" --resume
grep -q "not every rank could read ck/rel.ckpt: stopping" "$TMP/out" || { cat "$TMP/out"; fail "rank 0 did not say why the job stops"; }
grep -q "starting fresh" "$TMP/out" && fail "a rank started fresh beside a resumed one"
echo "ok: a rank that cannot see the checkpoint stops the job (exit 2), naming itself and the file"
# Copies at different steps: rank 1's directory gets the checkpoint of step 20.
(cd "$TMP/r1" && $MPIRUN -np 2 "$OLDPWD/$WORKER" --spec "$TMP/rel.json" --stop-after-steps 20 >"$TMP/rel2.log" 2>&1) ||
    { cat "$TMP/rel2.log"; fail "the second checkpoint run failed"; }
expect_error 2 "copies of ck/rel.ckpt disagree: steps 10 to 20" $MPIRUN -np 2 sh "$TMP/run.sh" --spec "$TMP/rel.json" --resume
echo "ok: ranks whose copies of the checkpoint are at different steps stop the job (exit 2)"

# 5. Resumed after the last epoch end. every_steps 7 does not divide the 20 (sgd, asgd) or
# 10 (ssgd) steps of the epoch, so the last checkpoint is the one written after it.
for c in sgd:1:1 ssgd:2:2 asgd:2:3; do
    a=${c%%:*} w=${c#*:} np=${c##*:}
    w=${w%%:*}
    cat >"$TMP/end-$a.json" <<JSON
{"name": "end-$a", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 640, "test_subset": 200},
 "algorithm": {"name": "$a"}, "workers": $w, "batch_size": 32, "epochs": 1, "seed": 3, "log_every": 0,
 "optimizer": {"lr": 0.05}, "checkpoint": {"every_steps": 7, "dir": "$TMP/end-$a"}}
JSON
    mpi "$np" "$TMP/end-$a-1.log" --spec "$TMP/end-$a.json" --summary "$TMP/end-$a-1.out" --metrics "$TMP/end-$a.jsonl"
    mpi "$np" "$TMP/end-$a-2.log" --spec "$TMP/end-$a.json" --resume --summary "$TMP/end-$a-2.out" --metrics "$TMP/end-$a.jsonl"
    grep -q "nothing left to train" "$TMP/end-$a-2.log" || { cat "$TMP/end-$a-2.log"; fail "$a: the resume at the end did not say so"; }
    for f in steps test_accuracy test_loss train_loss; do
        [ "$(json "$TMP/end-$a-2.out" .$f)" = "$(json "$TMP/end-$a-1.out" .$f)" ] ||
            fail "$a resumed at the end: $f $(json "$TMP/end-$a-2.out" .$f), the finished run's $(json "$TMP/end-$a-1.out" .$f)"
    done
    [ "$(jq -c '[.train_loss_running, .diverged]' "$TMP/end-$a-2.out")" = "[null,false]" ] ||
        fail "$a resumed at the end: train_loss_running and diverged $(jq -c '[.train_loss_running, .diverged]' "$TMP/end-$a-2.out")"
    # Issue 29: one evaluation per epoch end, rank 0's, and one of the restored weights.
    records_match_log "$TMP/end-$a.jsonl" "$a, run and resumed at the end" "$TMP/end-$a-1.log" "$TMP/end-$a-2.log"
    echo "ok: $a resumed after its last epoch end: steps $(json "$TMP/end-$a-2.out" .steps), test_accuracy $(json "$TMP/end-$a-2.out" .test_accuracy) as the finished run, train_loss_running null, not diverged"
done
