#!/bin/sh
# bench/preempt_notice.sh - a preemption loses at most one step, however long a step is.
# Under --policy fair (--preempt-min-run 0, localhost with 2 slots, --kill-grace 1), a
# low-priority 2-rank ssgd job whose rank 0 sleeps through 600x its step for its first
# SLOW_STEPS (4) steps (about 3 s a step here) and writes no periodic checkpoint
# (every_steps 1000) is preempted by a high-priority 2-rank job once rank 0 has logged
# step 1. The coordinator stops it with notice (SIGUSR1 to mpirun, forwarded to every
# rank: coordinator/run.c run_kill), so its ranks checkpoint at their next step boundary;
# requeued, it resumes at that step once the high job has SUCCEEDED, and SUCCEEDS with an
# uninterrupted run's step count. Checked: the log's "every rank stops after step N" and
# "resumed from ... at step N" (lost steps 0). With a SIGTERM to mpirun instead (the
# preemption's stop before), Open MPI's teardown SIGKILLs the ranks about 2 s later,
# before a 3 s step ends: no checkpoint, and the job starts over from step 0.
# Not in make test: the slow steps take about 15 s of the run.
#   make && sh bench/preempt_notice.sh   (about 40 s on 2 cores)
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
SLOW_STEPS=${SLOW_STEPS:-4}
trap 'exit 143' TERM
trap 'exit 130' INT

export PACER_TOKEN=preempt-notice-$$
printf 'localhost slots=2\n' >"$TMP/hosts"
start_coord --hostfile "$TMP/hosts" --preflight off --policy fair --preempt-min-run 0 --kill-grace 1 --max-restarts 0
BASE=$(api_base)
spec2 "$TMP/lo.json" lo 2 low
jq --argjson k "$SLOW_STEPS" '.log_every = 1 | .checkpoint.every_steps = 1000 |
    .emulate = {schedule: [{step: 0, rank: 0, slowdown: 600}, {step: $k, rank: 0, slowdown: 1}]}' \
    "$TMP/lo.json" >"$TMP/lo.t" && mv "$TMP/lo.t" "$TMP/lo.json"
spec2 "$TMP/hi.json" hi 1 high
steps_want=$((2 * 2048 / 128))

lo=$(submit "$TMP/lo.json")
log="$STATE/jobs/$lo/log"
logged_step1() { grep -q '^epoch 1/[0-9]* step 1/' "$log" 2>/dev/null; }
await 120 "job $lo to log its first step" logged_step1
hi=$(submit "$TMP/hi.json")
await 120 "job $lo to be requeued" is_api_state "$lo" QUEUED
await 300 "job $hi to succeed" is_api_state "$hi" SUCCEEDED
await 300 "job $lo to succeed" is_api_state "$lo" SUCCEEDED
stop=$(grep -o 'every rank stops after step [0-9]*' "$log" | tail -1 | sed 's/.* step //')
[ -n "$stop" ] || { grep -e notice -e resumed "$log"; fail "$lo: its ranks did not stop at a step boundary on the preemption"; }
grep -q "^resumed from .* at step $stop " "$log" ||
    fail "$lo: stopped after step $stop but resumed: $(grep '^resumed from' "$log" || echo 'from the start')"
[ "$(q "$lo" .summary.steps)" = "$steps_want" ] || fail "$lo: summary.steps $(q "$lo" .summary.steps), want $steps_want"
echo "ok: $lo preempted by $hi with notice: its ranks stopped after step $stop, checkpointed there, and it resumed at step $stop (0 steps lost); SUCCEEDED with $steps_want steps"
stop_coord
