#!/bin/sh
# bench/sim_one.sh PACER_SIM DIR - one run of the simulated benchmarks (bench/sim_lib.sh
# queues them; SIM_WORKER, when set, is the SMPI worker to run, e.g. a copy that a
# rebuild during a long benchmark does not touch). DIR/spec.new holds the spec and, on its last line, the worker arguments.
# Skips the run when DIR/row.json exists for the same spec.new; otherwise runs pacer-sim
# and writes DIR/summary.json and DIR/row.json, the figures the tables use:
#   loss_end   batch-weighted mean of the workers' minibatch losses over the last 10% of
#              the training time (the training loss "at equal time")
#   sps        training samples per simulated second (the workers' samples / train_s)
#   plus the summary's test_accuracy, test_loss, train_s, steps, staleness per worker,
#   comm_frac: the workers' communication and waiting over their total step time, and
#   epoch_t: the simulated times at which rank 0 ended each epoch (after its evaluation),
#   and time_to_target_s, noise_scale and the goodput planner's global batch (mean, final)
#   and nodes left out (bench/sim_goodput.sh), evals: rank 0's evaluations as [train_s,
#   test_accuracy] (bench/sim_async_target.sh).
set -u
sim=$1
d=$2
if [ -f "$d/row.json" ] && [ -f "$d/spec.run" ] && cmp -s "$d/spec.new" "$d/spec.run"; then exit 0; fi
rm -f "$d/row.json"
n=$(wc -l <"$d/spec.new")
head -n $((n - 1)) "$d/spec.new" >"$d/spec.json"
args=$(tail -n 1 "$d/spec.new")
start=$(date +%s)
# shellcheck disable=SC2086 # the worker arguments are words
if ! "$sim" ${SIM_WORKER:+--worker "$SIM_WORKER"} --spec "$d/spec.json" --summary "$d/summary.json" --metrics "$d/metrics.jsonl" -- $args >"$d/log" 2>&1; then
    echo "FAILED: $d (log: $d/log)"; tail -5 "$d/log"; exit 255
fi
jq -c --slurpfile m "$d/metrics.jsonl" '
  ([$m[] | select(.kind == "step" and .role == "worker")]) as $r |
  ($r | map(.time) | max) as $t |
  ([$r[] | select(.time >= 0.9 * $t)]) as $w |
  [.per_rank[] | select(.role == "worker")] as $wk |
  { loss_end: (($w | map(.loss * .batch) | add) / ($w | map(.batch) | add)),
    train_loss, test_accuracy, test_loss, train_s, steps,
    sps: (($wk | map(.samples) | add) / .train_s),
    simulated_wall_s,
    stale_mean: [$wk[] | .staleness.mean], stale_p95: [$wk[] | .staleness.p95],
    stale_all: .staleness.mean,
    batch_final: [$wk[] | .batch_final],
    comm_frac: (($wk | map(.comm_s + .idle_s) | add) / ($wk | map(.compute_s + .comm_s + .idle_s) | add)),
    epoch_t: [$m[] | select(.kind == "epoch" and .rank == 0) | .time],
    time_to_target_s, noise_scale, gb_mean: .goodput.global_batch_mean, gb_final: .goodput.global_batch_final,
    left_out: (.goodput.nodes_left_out // [] | length),
    evals: [$m[] | select((.kind == "eval" or .kind == "epoch") and .rank == 0 and .train_s != null) |
            [.train_s, .test_accuracy]] }' \
    "$d/summary.json" >"$d/row.tmp" || { echo "FAILED: $d: cannot read its summary or metrics"; exit 255; }
mv "$d/row.tmp" "$d/row.json"
cp "$d/spec.new" "$d/spec.run"
rm -f "$d/metrics.jsonl"
echo "ran: $(basename "$d") in $(( $(date +%s) - start )) s ($(grep -o 'simulated s in .*' "$d/log" | head -1))"
