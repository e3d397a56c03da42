# A job grown past its spec's workers (issue 46, max_workers): with the coordinator's word
# (--world W) the worker runs on workers < W <= max_workers ranks, which share the spec's
# global batch (workers x batch_size) as the ranks of an elastic shrink do; above
# max_workers, or without --world, or below min_workers, it stops with a message naming
# the field. Checked for
# plain ssgd (a whole run: the summary's world and global batch), dynamic batching and the
# goodput planner (their plans over 3 ranks), and a checkpoint of the grown world resuming
# on the spec's 2 (as an elastic shrink does). No speed is asserted.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
# ssgd, workers 2 x 32 (global batch 64), may grow to 3: 768 samples, 12 steps an epoch.
cat >"$TMP/g.json" <<JSON
{"name": "grow", "model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 2, "max_workers": 3,
 "batch_size": 32, "dataset": {"name": "fashion-mnist", "train_subset": 768, "test_subset": 200},
 "optimizer": {"lr": 0.05, "momentum": 0.9}, "epochs": 2, "seed": 5, "log_every": 4,
 "checkpoint": {"every_steps": 4, "dir": "$TMP/ck"}}
JSON

# 1. Three ranks with --world 3 train the whole job over the global batch of 64.
$MPIRUN -np 3 $WORKER --spec "$TMP/g.json" --world 3 --summary "$TMP/g.out" >"$TMP/g.log" 2>&1 ||
    { cat "$TMP/g.log"; fail "mpirun -np 3 --world 3 of a workers 2, max_workers 3 spec failed"; }
grep -q "elastic: grown to 3 workers (the spec's 2, max_workers 3) sharing its global batch of 64" "$TMP/g.log" ||
    { cat "$TMP/g.log"; fail "no line saying the job runs grown to 3 workers"; }
[ "$(json "$TMP/g.out" '"\(.world_workers) \(.global_batch) \(.workers) \(.per_rank | length)"')" = "3 64 2 3" ] ||
    fail "summary: $(jq -c '{world_workers, global_batch, workers, ranks: (.per_rank | length)}' "$TMP/g.out")"
# The even split of 64 over 3: 22 21 21, every sample of the global batch trained once.
[ "$(jq -r '[.per_rank[].batch_final] | join(" ")' "$TMP/g.out")" = "22 21 21" ] ||
    fail "the 3 ranks' batches: $(jq -c '[.per_rank[].batch_final]' "$TMP/g.out"), want 22 21 21"
[ "$(json "$TMP/g.out" .train_samples)" = $((2 * 768)) ] ||
    fail "train_samples $(json "$TMP/g.out" .train_samples), want $((2 * 768)) (2 epochs of 768)"
at_least "test_accuracy of the grown run" "$(json "$TMP/g.out" .test_accuracy)" 0.3
echo "ok: 3 ranks of a workers 2 spec: world_workers 3, global_batch 64, batches 22 21 21"

# 2. Refused: above max_workers, and a grown world without the coordinator's --world.
expect_error 2 "max_workers: the spec lets the job grow to 3 workers (workers 2), but mpirun started 4 processes" \
    $MPIRUN -np 4 $WORKER --spec "$TMP/g.json" --world 4
expect_error 2 "workers: the spec asks for 2 workers; 3 processes (up to max_workers 3) need --world 3" \
    $MPIRUN -np 3 $WORKER --spec "$TMP/g.json"
# A spec without max_workers never grows (the message it always gave).
jq 'del(.max_workers)' "$TMP/g.json" >"$TMP/fixed.json"
expect_error 2 "workers: the spec asks for 2 workers, so algorithm ssgd needs 2 processes, but mpirun started 3" \
    $MPIRUN -np 3 $WORKER --spec "$TMP/fixed.json" --world 3

# Nor shrunk below min_workers, even with --world (the coordinator never launches that).
jq '.min_workers = 2' "$TMP/g.json" >"$TMP/rigid.json"
expect_error 2 "min_workers: the spec lets the job shrink to 2 workers (workers 2), but --world 1 gives it 1" \
    $MPIRUN -np 1 $WORKER --spec "$TMP/rigid.json" --world 1

# 3. The grown world's checkpoint resumes on the spec's 2 ranks (the lent slot taken back).
rm -rf "$TMP/ck"
$MPIRUN -np 3 $WORKER --spec "$TMP/g.json" --world 3 --stop-after-steps 10 >"$TMP/r.1" 2>&1 ||
    { cat "$TMP/r.1"; fail "the 3-rank run to step 10 failed"; }
[ -f "$TMP/ck/grow.ckpt" ] || { cat "$TMP/r.1"; fail "no checkpoint after 10 steps on 3 ranks"; }
$MPIRUN -np 2 $WORKER --spec "$TMP/g.json" --world 2 --resume --summary "$TMP/r.out" >"$TMP/r.2" 2>&1 ||
    { cat "$TMP/r.2"; fail "resuming the 3-rank checkpoint on 2 ranks failed"; }
grep -q "written by 3 workers; resuming with 2: the global batch 64 is re-planned: 32 32" "$TMP/r.2" ||
    { cat "$TMP/r.2"; fail "3 -> 2: no re-plan line"; }
[ "$(json "$TMP/r.out" '"\(.world_workers) \(.global_batch)"')" = "2 64" ] ||
    fail "resumed summary: $(jq -c '{world_workers, global_batch}' "$TMP/r.out")"
echo "ok: a checkpoint of 3 ranks resumed on 2: re-planned 32 32, global_batch 64"

# 4. Dynamic batching and the goodput planner plan over the 3 ranks within the global batch.
for k in dynamic_batch goodput; do
    jq --arg k "$k" '.algorithm[$k] = true | .algorithm.params = {"replan_steps": 4} | del(.checkpoint)
        | .epochs = 1' "$TMP/g.json" >"$TMP/$k.json"
    $MPIRUN -np 3 $WORKER --spec "$TMP/$k.json" --world 3 --summary "$TMP/$k.out" >"$TMP/$k.log" 2>&1 ||
        { cat "$TMP/$k.log"; fail "$k: 3 ranks of a workers 2 spec failed"; }
    [ "$(json "$TMP/$k.out" '"\(.world_workers) \(.per_rank | length)"')" = "3 3" ] ||
        fail "$k: summary $(jq -c '{world_workers, ranks: (.per_rank | length)}' "$TMP/$k.out")"
    gb=$(json "$TMP/$k.out" .global_batch)
    sum=$(jq '[.per_rank[].batch_final] | add' "$TMP/$k.out")
    # dynamic batching splits 64 exactly; goodput may raise the global batch, never lower
    # it, and leave a rank out (batch 0) but never take more than it.
    case $k in
        dynamic_batch) [ "$gb" = 64 ] && [ "$sum" = 64 ] || fail "$k: global_batch $gb, batches sum $sum, want 64" ;;
        goodput) { cmp_num "$gb" ">=" 64 && cmp_num "$sum" "<=" "$gb"; } || fail "$k: global_batch $gb, batches $sum" ;;
    esac
    echo "ok: $k on 3 ranks of a workers 2 spec: global_batch $gb, batches $(jq -c '[.per_rank[].batch_final]' "$TMP/$k.out")"
done
