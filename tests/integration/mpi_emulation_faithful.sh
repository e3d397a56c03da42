# Emulated heterogeneity is faithful while its demand fits in the cores (issue 11).
#
# 1. asgd, 4 workers with slowdowns [10, 20, 20, 40]: nominal speeds 4 : 2 : 2 : 1 over the
#    135 pushes of one epoch (34,560 samples, batch 256; 60, 30, 30 and 15 at those speeds).
#    What the emulation controls is each worker's compute phase (its own compute and the
#    wait that stretches it, phases compute + emulated): f times its undisturbed cost u a
#    step, each within 15%. u is the smallest thread CPU time the host's ranks have
#    measured for their batch size (seeded by five calibration passes each, then shared):
#    time the scheduler gives to other processes never enters it, contention only ever
#    inflates a measurement, which the minimum discards, and a rank kept on a slower vCPU
#    (one ran this step 15-25% slower than the other on the 2026-11-25 VM) takes the
#    faster one's cost. The profile asks for 0.23 cores (1/10 + 2/20 + 1/40), so even a
#    worker that gets a sixth of a core computes its u-long share well inside its f x u
#    step (f >= 10) and then sleeps. The run checks it against u as shared at the start
#    and as lowered by the end (undisturbed_host_s, undisturbed_step_s).
#    A late wake-up from that wait stays in the compute phase: at load 14 (seven runnable
#    threads a core) the fast worker's reached 1.20 f x u, and the test does not hold there.
#    What the emulation does not control is the push/reply hand-over, the rest of a step:
#    1-15 ms a push on an idle machine, 15-25 ms beside two busy loops,
#    44-61 ms beside six training runs and the test lanes (load 8-10: 2026-11-29, measured
#    per worker). A fixed h a push moves the push counts off the nominal ratio towards
#    equal ones (with u about 9 ms: 25 ms by up to 11% of nominal, 45 ms by up to 18%, the
#    slowest worker's share), which failed the nominal ratio's 15% there ([51, 32, 34, 18],
#    [53, 32, 32, 18]).
#    So the push counts are checked against the shares 1 / (f x u + h) that each worker's
#    emulated step and its own measured hand-over h give, within 15%, and the nominal
#    ratio is printed. At batch 128 (u about 6 ms, steps from 60 ms) the hand-over weighed
#    twice as much, which is why the batch is 256; 15 pushes for the slowest keep one push
#    of start-up or end-of-epoch slack at 7%.
# 2. The same check says when a profile does not fit: 4 ranks pinned to one core with
#    slowdowns [1, 1, 2, 4] ask for 2.75 cores: the worker says so at start-up and the
#    summary carries "emulation": {"faithful": false, "demand_cores": 2.75, "cores": 1,
#    "polite_wait": true} (an emulated slowdown waits politely);
#    with [4, 4, 8, 16] (0.69 cores) it is faithful. What happened is measured too: each
#    emulated rank's per_rank emulation_late_steps (steps with nothing to wait), at least
#    half of the 2x rank's steps in the first case, under half of every worker's in 1.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat > "$TMP/ratio.json" <<JSON
{"name": "ratio", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 34560, "test_subset": 200},
 "algorithm": {"name": "asgd"}, "workers": 4, "batch_size": 256, "epochs": 1, "seed": 3, "log_every": 0,
 "emulate": {"slowdown": [10, 20, 20, 40]}}
JSON
$MPIRUN -np 5 $WORKER --spec "$TMP/ratio.json" --summary "$TMP/ratio.out" >"$TMP/ratio.log" 2>&1 \
    || { cat "$TMP/ratio.log"; fail "asgd failed"; }
pushes=$(jq -c '[.per_rank[] | select(.role == "worker") | .steps]' "$TMP/ratio.out")
echo "pushes per worker $pushes (nominal 60, 30, 30, 15); emulation $(jq -c .emulation "$TMP/ratio.out")"
jq -e '.emulation.faithful' "$TMP/ratio.out" >/dev/null || fail "a 0.23-core profile was judged unfaithful"
# per worker: f, pushes n, emulated compute c and hand-over h a push (s), u at start and end
w=$(jq -c '[.per_rank[] | select(.role == "worker") | {f: .slowdown, n: .steps,
    c: ((.phases.compute + .phases.emulated) / .steps), h: ((.phases.step_s - .phases.compute - .phases.emulated) / .steps),
    u0: .undisturbed_host_s, u1: .undisturbed_step_s}]' "$TMP/ratio.out")
echo "per worker $w"
jq -e -n --argjson w "$w" '$w | length == 4 and all(.c >= 0.85 * .f * .u1 and .c <= 1.15 * .f * .u0)' >/dev/null ||
    fail "a worker's compute phase is not within 15% of f x u a step: $w"
echo "ok: each worker's compute phase lasts f x u a step within 15%"
jq -e -n --argjson w "$w" '($w | map(1 / (.f * .u0 + .h))) as $r | ($r | add) as $s | ($w | map(.n) | add) as $t |
    [range(0; 4) as $i | ($w[$i].n / ($t * $r[$i] / $s)) | . >= 0.85 and . <= 1.15] | all' >/dev/null ||
    fail "pushes $pushes are not within 15% of the shares of 1 / (f x u + h): $w"
nominal=$(jq -c -n --argjson p "$pushes" '($p | add) as $t | [4, 2, 2, 1] | to_entries |
    map($p[.key] / ($t * .value / 9) * 100 | round)')
echo "ok: push counts follow the emulated steps and the measured hand-over within 15% ($nominal% of nominal)"
# One undisturbed cost for the host (worker/emulate.c, share_undisturbed): the four start
# from the same u, and a rank may only lower it afterwards with its own measurements
# (before it was shared, a rank kept on the slower vCPU ended 40% above the others). How
# far each lowers it depends on the load during calibration and on how many steps it ran
# (one clean-clone run beside the test lanes: the 15-push worker ended 17% above the
# others, all below the shared start), so that is not checked.
costs=$(jq -c '[.per_rank[] | select(.role == "worker") | [.undisturbed_host_s, .undisturbed_step_s]]' "$TMP/ratio.out")
jq -e -n --argjson u "$costs" '($u | all(.[0] != null and .[1] != null and .[1] <= .[0])) and
    ($u | map(.[0]) | unique | length == 1)' >/dev/null ||
    fail "the workers' undisturbed step costs [at start, at the end] $costs: not one host's at start, or raised since"
echo "ok: undisturbed step costs [at start, at the end] $costs"
# Each emulated rank counts the steps it had nothing to wait in (already longer than f x u):
# at 0.23 cores of demand on this machine, few.
late=$(jq -c '[.per_rank[] | select(.role == "worker") | [.emulation_late_steps, .steps]]' "$TMP/ratio.out")
jq -e -n --argjson l "$late" '$l | all(.[0] != null and .[0] < .[1] / 2)' >/dev/null ||
    fail "late steps per worker [late, steps] $late: not counted, or half or more late at 0.23 cores"
echo "ok: [late, steps] per worker $late"

unfaithful() {   # SLOWDOWNS -> the summary's emulation object, with 4 ranks on one core
    cat > "$TMP/u.json" <<JSON
{"name": "unf", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 10240, "test_subset": 100},
 "algorithm": {"name": "ssgd"}, "workers": 4, "batch_size": 256, "epochs": 1, "seed": 3, "log_every": 0,
 "emulate": {"slowdown": $1}}
JSON
    taskset -c 0 $MPIRUN -np 4 $WORKER --spec "$TMP/u.json" --summary "$TMP/u.out" >"$TMP/u.log" 2>&1 \
        || { cat "$TMP/u.log"; fail "ssgd $1 failed"; }
    jq -c '.emulation' "$TMP/u.out"
}
got=$(unfaithful '[1, 1, 2, 4]')
[ "$got" = '{"cores":1,"demand_cores":2.75,"faithful":false,"polite_wait":true}' ] || fail "emulation of [1,1,2,4] on one core: $got"
grep -q "ask for 2.75 cores of compute .* but have 1" "$TMP/u.log" || { cat "$TMP/u.log"; fail "no start-up warning"; }
echo "ok: [1,1,2,4] on one core: $got, and the worker said so at start-up"
# What happened, measured: the rank slowed 2x shares one core with three others computing
# at the same time (ssgd starts every step together), so its compute alone takes about 4u
# of wall time, past its 2u: most of its steps had nothing to wait. That needs a step
# longer than a scheduler time slice (a few ms), or a rank computes its whole step in one
# slice and core sharing shows as all-reduce waiting instead: at batch 32 (u about 1 ms)
# it counted none. Here u is about 9 ms at batch 256 (2026-11-26); on a machine where it
# is under 4 ms only the counting (null for unslowed ranks, a number for slowed ones) is
# checked, and the test says so.
late=$(jq -c '[.per_rank[] | select(.role == "worker") | [.slowdown, .emulation_late_steps, .steps, .undisturbed_step_s]]' "$TMP/u.out")
jq -e -n --argjson l "$late" '($l | map(select(.[0] == 1) | .[1] == null) | all) and
    ($l | map(select(.[0] > 1) | .[1] != null) | all)' >/dev/null ||
    fail "[slowdown, late steps, steps, u] per worker of [1,1,2,4] on one core: $late; want null for 1, counted for 2 and 4"
if jq -e -n --argjson l "$late" '$l | map(select(.[0] == 2)) | .[0][3] >= 0.004' >/dev/null; then
    jq -e -n --argjson l "$late" '$l | map(select(.[0] == 2)) | length == 1 and (.[0] | .[1] >= .[2] / 2)' >/dev/null ||
        fail "[slowdown, late steps, steps, u] per worker of [1,1,2,4] on one core: $late; want at least half late for 2"
    echo "ok: [slowdown, late steps, steps, u] $late"
else
    echo "ok: [slowdown, late steps, steps, u] $late (counted; the 2x rank's u is under 4 ms, a time slice: its late share not checked)"
fi
got=$(unfaithful '[4, 4, 8, 16]')
[ "$got" = '{"cores":1,"demand_cores":0.6875,"faithful":true,"polite_wait":true}' ] || fail "emulation of [4,4,8,16] on one core: $got"
echo "ok: [4,4,8,16] on one core: $got"
