#!/bin/sh
# bench/notice_trials.sh - notice trials: N (10) jobs on the real coordinator (local
# launcher, --max-restarts 0, so a failure would end a job FAILED), each interrupted with
# notice at a random moment: SIGTERM to one of its two ranks or to its mpirun, chosen at
# random, once rank 0 has logged a random step (then a random part of a step later): for
# a rank up to 5 steps before the end, for mpirun up to LATE (24) steps before it, since
# mpirun passes a SIGTERM on only 1 s later (below) and one that arrives after the last
# step is no notice (the job just finishes: coordinator/run_tick.c exit_checked). The
# choices come from SEED (1): the same seed gives the same targets and steps. Each job must
# SUCCEED with one interruption whose lost_steps <= 1, no restart, and the summary's step
# count of an uninterrupted run of the same spec (run first). Prints a table and "K of N
# trials passed", appends both to $OUT (build/bench/results.md); exit 0 when all passed.
# The job: LeNet-5, 2 ssgd ranks, EPOCHS (4) of 2048 Fashion-MNIST images at a global batch
# of 128 (16 steps an epoch), each rank sleeping through SLOW (20) times its step so that
# a job trains for seconds. A SIGTERM to mpirun reaches the ranks 1 s later inside Open
# MPI's teardown, which SIGKILLs them 1 s after that: steps this short reach their boundary
# in time (common/notice.h says why a drain uses SIGUSR1 instead).
#   make && sh bench/notice_trials.sh   (about 12 s a trial on 2 cores)
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
OUT=${OUT:-$BUILD/bench/results.md}
mkdir -p "$(dirname "$OUT")"
md() { printf '%s\n' "$*" | tee -a "$OUT"; }
N=${N:-10} SEED=${SEED:-1} EPOCHS=${EPOCHS:-4} SLOW=${SLOW:-20} LATE=${LATE:-24}
trap 'exit 143' TERM
trap 'exit 130' INT
start_coord --max-restarts 0

spec2 "$TMP/t.json" trial "$EPOCHS"
jq --argjson s "$SLOW" '.log_every = 1 | .checkpoint.every_steps = 1000 | .emulate.slowdown = [$s, $s]' \
    "$TMP/t.json" >"$TMP/t.t" && mv "$TMP/t.t" "$TMP/t.json"
steps_epoch=$((2048 / 128))
steps=$((EPOCHS * steps_epoch))

# The uninterrupted run: the summary's step count every trial must end with.
id=$(submit "$TMP/t.json")
cli wait "$id" --timeout 600 >/dev/null || fail "the uninterrupted run $id did not succeed"
steps_want=$(field_of "$id" summary.steps)
[ "$steps_want" = "$steps" ] || echo "note: the uninterrupted run took $steps_want steps ($steps expected)"

# rank0_step ID - the last step rank 0 logged (epoch E/.. step S/.. counted from 1), or 0.
rank0_step() {
    grep -o '^epoch [0-9]*/[0-9]* step [0-9]*/' "$STATE/jobs/$1/log" 2>/dev/null | tail -1 |
        awk -v n="$steps_epoch" -F'[ /]' '{ print ($2 - 1) * n + $5 } END { if (!NR) print 0 }'
}
past() { [ "$(rank0_step "$1")" -ge "$2" ]; }
# target_pid ID WHAT - the job's mpirun, or its pacer-worker of rank WHAT (0 or 1).
target_pid() {
    s=$(job_pid "$1")
    for p in $(ps -eo pid=,sid= | awk -v s="$s" '$2 == s { print $1 }'); do
        c=$(cat "/proc/$p/comm" 2>/dev/null) || continue
        if [ "$2" = mpirun ]; then
            [ "$c" = mpirun ] && { echo "$p"; return; }
        elif [ "$c" = pacer-worker ] &&
            tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
            echo "$p"
            return
        fi
    done
}

md ""
md "Notice trials: $N jobs, SEED=$SEED, $steps steps each (uninterrupted: $steps_want), $(date -u +%Y-%m-%d) at $(git rev-parse --short HEAD 2>/dev/null)"
md "on $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
md ""
md "| trial | job | SIGTERM to | after step | at_step | checkpoint_step | lost_steps | restarts | steps | state | verdict |"
md "|---|---|---|---|---|---|---|---|---|---|---|"
passed=0
i=1
while [ "$i" -le "$N" ]; do
    # the trial's draws: the target (rank 0, rank 1, mpirun), the step (2 .. steps - 5, or
    # steps - LATE for mpirun) and a fraction of a step's time (0 to 0.1 s) after rank 0
    # logged it
    set -- $(awk -v s="$SEED" -v i="$i" -v n="$steps" -v late="$LATE" 'BEGIN { srand(s * 1000 + i); t = int(rand() * 3);
        last = (t == 2 ? n - late : n - 5); if (last < 2) last = 2
        k = 2 + int(rand() * (last - 1)); printf "%s %d %.3f\n", (t == 2 ? "mpirun" : t), k, rand() * 0.1 }')
    # (not "what": await, coordinator_lib.inc's, sets that one)
    tgt=$1 kstep=$2 frac=$3
    id=$(submit "$TMP/t.json")
    await 300 "trial $i ($id) to train past step $kstep" past "$id" "$kstep"
    sleep "$frac"
    pid=$(target_pid "$id" "$tgt")
    sent=$(rank0_step "$id")
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || sent="(gone)"
    cli wait "$id" --timeout 600 >/dev/null 2>&1
    cli status "$id" >"$TMP/job.json"
    row=$(jq -r --arg w "$([ "$tgt" = mpirun ] && echo mpirun || echo "rank $tgt")" --arg s "$sent" \
        '.interruptions[0] as $x | "\($w) | \($s) | \($x.at_step // "-") | \($x.checkpoint_step // "-") | \($x.lost_steps // "-") | \(.restarts) | \(.summary.steps // "-") | \(.state)"' \
        "$TMP/job.json")
    if jq -e --argjson want "$steps_want" '.state == "SUCCEEDED" and .restarts == 0 and (.interruptions | length) == 1 and
        (.interruptions[0].lost_steps | type == "number") and .interruptions[0].lost_steps <= 1 and .summary.steps == $want' \
        "$TMP/job.json" >/dev/null; then
        verdict=pass
        passed=$((passed + 1))
    else
        verdict=FAIL
        grep "job $id" "$TMP/coord.log" | tail -5 >&2
    fi
    md "| $i | $id | $row | $verdict |"
    i=$((i + 1))
done
md ""
md "$passed of $N trials passed (SUCCEEDED, one interruption with lost_steps <= 1, 0 restarts, $steps_want steps)"
stop_coord
[ "$passed" = "$N" ]
