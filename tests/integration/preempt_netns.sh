# Preemption through a checkpoint (issue 45) on the network-namespace cluster
# (tests/integration/netns_cluster.inc: pw1..pw3, a slot each) under --policy fair
# (--preempt-min-run 0): a low-priority 2-worker ssgd job checkpointing every 8 steps runs
# on two hosts; once it is past a checkpoint a high-priority 3-worker job is submitted,
# which needs every host (shrinking the low one to 1 rank would not free enough:
# preempt_shrink.sh is that case). The low job is stopped and requeued (QUEUED,
# preempted_by the high one); the high one runs to SUCCEEDED; the low one is claimed again
# and resumes from its last checkpoint. Checked: the newest checkpoint (with a known step)
# the API lists while the job waits is no more than one checkpoint interval (8 steps)
# behind the step its ranks were seen at before the stop (nothing lost beyond the last
# checkpoint); the step it resumed at is that checkpoint's or a later one's (see below)
# and within 8 of what was seen; it then ran
# every step of its epochs (its summary) and SUCCEEDED. Deadlines are minutes; no speed is
# asserted (a loaded 2-core machine). Own prefix ppe- and /24 10.81.0 (CI runs the
# namespace tests in sequence: none may collide). Needs root (else exit 77).
T=preempt_netns T_PREFIX=ppe- T_NET=10.81.0 T_COORD_ARGS="--policy fair --preempt-min-run 0"
. tests/integration/netns_cluster.inc

# spec2 FILE NAME EPOCHS PRIORITY WORKERS - ssgd ranks, 1024 images of 32 a rank (2 ranks:
# 16 steps an epoch), a checkpoint every 8. Rank 0 sleeps through 60x its step (emulate: no load, no
# value changed) so that the low job is still training when the high one comes.
spec2() {
    cat >"$1" <<JSON
{"name": "$2", "model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": $5, "batch_size": 32,
 "priority": "$4", "dataset": {"name": "fashion-mnist", "train_subset": 1024, "test_subset": 500},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "epochs": $3, "seed": 11, "log_every": 8,
 "checkpoint": {"every_steps": 8}, "emulate": {"schedule": [{"step": 0, "rank": 0, "slowdown": 60}]}}
JSON
}
spec2 "$TMP/lo.json" lo 12 low 2
spec2 "$TMP/hi.json" hi 1 high 3
# json ID - GET /api/v1/jobs/ID into $TMP/body.
json() { [ "$(http GET "/api/v1/jobs/$1")" = 200 ] || fail "GET /api/v1/jobs/$1: $(cat "$TMP/body")"; }
# The highest step a checkpoint the job keeps was written at (its linked name says it).
# Not only the `latest` item: a rank outliving the stop (below) may have renamed a newer
# NAME.ckpt into place and not linked its name yet, and that one's step is then unknown.
latest_ckpt_step() { json "$1" && jq -r '[.checkpoints.items[]?.step // empty] | max // empty' "$TMP/body"; }

lo=$(submit "$TMP/lo.json")
# Until its ranks are past a checkpoint: the highest step a rank of it was seen at.
seen=0
end=$(($(date +%s) + 300))
until [ -n "$(latest_ckpt_step "$lo")" ] && [ "$(latest_ckpt_step "$lo")" -ge 8 ]; do
    [ "$(date +%s)" -ge "$end" ] && { tail -20 "$STATE/jobs/$lo/log"; fail "job $lo: no checkpoint after 300 s"; }
    [ "$(jq -r .state "$TMP/body")" = RUNNING ] || [ "$(jq -r .state "$TMP/body")" = QUEUED ] ||
        fail "job $lo is $(jq -r .state "$TMP/body") before the high-priority job came"
    sleep 0.3
done
hi=$(submit "$TMP/hi.json")
echo "ok: low-priority job $lo past its checkpoint at step $(latest_ckpt_step "$lo"); high-priority $hi submitted"

# Until the low one is requeued, the steps its ranks were seen at on the way.
end=$(($(date +%s) + 120))
while :; do
    if [ "$(http GET "/api/v1/jobs/$lo/nodes")" = 200 ]; then
        s=$(jq '[.ranks[]?.step // 0] | max // 0' "$TMP/body" 2>/dev/null)
        [ -n "$s" ] && [ "$s" -gt "$seen" ] && seen=$s
    fi
    [ "$(state_of "$lo")" = QUEUED ] && break
    [ "$(date +%s)" -ge "$end" ] && { tail -30 "$TMP/coord.log"; fail "job $lo not requeued 120 s after $hi came"; }
    sleep 0.2
done
json "$lo"
[ "$(jq -r .preempted_by "$TMP/body")" = "$hi" ] || fail "$lo: preempted_by '$(jq -r .preempted_by "$TMP/body")', want $hi"
jq -r .reason "$TMP/body" | grep -q "^preempted by $hi at [0-9.]*, of a higher priority: requeued to resume from its checkpoint$" ||
    fail "$lo: reason '$(jq -r .reason "$TMP/body")'"
ck=$(latest_ckpt_step "$lo")
[ -n "$ck" ] && [ "$ck" -ge 8 ] || fail "$lo: no checkpoint listed once requeued: $(jq -c .checkpoints "$TMP/body")"
[ "$ck" -ge $((seen - 8)) ] ||
    fail "$lo: its ranks were seen at step $seen, its last checkpoint is at $ck: more than one interval (8) would be lost"
echo "ok: $lo requeued (preempted_by $hi); its ranks seen at step $seen, its checkpoint at step $ck"

finish "$hi" 300 >/dev/null || exit 1
echo "ok: $hi SUCCEEDED"
finish "$lo" 600 >/dev/null || exit 1
r=$(grep -o 'resumed from .* at step [0-9]*' "$STATE/jobs/$lo/log" | sed 's/.* at step //' | sort -n | tail -1)
# At least that checkpoint, and one the job wrote: the one the preemption's notice left at
# the step the ranks stopped after ($ck), or one of its interval (a multiple of 8: the
# ranks on the remote hosts may outlive mpirun for a moment and write the next one, see
# docs/TESTING.md), which the resumed attempt then rightly reads.
[ -n "$r" ] && [ "$r" -ge "$ck" ] && [ "$r" -ge $((seen - 8)) ] && { [ "$r" = "$ck" ] || [ $((r % 8)) = 0 ]; } ||
    fail "$lo resumed at step '${r:-none}', want its checkpoint's ($ck or a later one): $(grep -i resum "$STATE/jobs/$lo/log" | head -3)"
# and in the epoch of that step (the r-th: 16 steps an epoch, counted from 1)
grep -q "resumed from .* at step $r (epoch $(((r - 1) / 16 + 1)))" "$STATE/jobs/$lo/log" ||
    fail "$lo's resume at step $r is not in epoch $(((r - 1) / 16 + 1)): $(grep -i resum "$STATE/jobs/$lo/log" | head -3)"
json "$lo"
steps=$(jq -r '.summary.steps // empty' "$TMP/body")
[ "$steps" = $((12 * 16)) ] || fail "$lo ran $steps steps in all, want $((12 * 16)): $(jq -c .summary "$TMP/body")"
[ "$(jq -r .preempted_by "$TMP/body")" = "$hi" ] || fail "$lo's record lost its preemption: $(jq -c '{preempted_by}' "$TMP/body")"
echo "ok: $lo resumed at step $r (epoch $(((r - 1) / 16 + 1)), its checkpoint), ran all $steps steps and SUCCEEDED"
