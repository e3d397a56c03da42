# What recording the time breakdown and the --trace timeline costs (issue 15; target:
# under 2% of step time). Two measurements:
#  1. bench/phase_cost (C): a synthetic step of fixed work (1 ms and 5 ms; a LeNet-5 step
#     of batch 64 on one core takes several ms) bare, with 12 marks (more than any
#     algorithm makes) and with the marks plus the --trace ring; median of alternating
#     blocks. The marks cannot be switched off in pacer-worker, so this is where "with and
#     without recording" is compared.
#  2. pacer-worker end to end: LeNet-5 ssgd on 2 ranks, with and without --trace,
#     alternating runs, RUNS seeds each; mean ± sd of the median step_s per run.
# Figures from a shared or loaded machine are noise: re-measure on a quiet one.
. bench/lib.sh
RUNS=${RUNS:-3}
FASHION=${FASHION:-/usr/share/datasets/fashion-mnist}
[ -x "$BUILD/bench/phase_cost" ] || { echo "build $BUILD/bench/phase_cost first (make)"; exit 1; }
md ""
md "### Recording the time breakdown (\`sh bench/trace_overhead.sh\`)"
md ""
md "| synthetic step | bare | 12 marks | marks + --trace ring | overhead marks | overhead marks + ring |"
md "|---|---|---|---|---|---|"
for us in 1000 5000; do
    out=$("$BUILD/bench/phase_cost" "$us" 15) || exit 1
    set -- $(echo "$out" | awk '/^bare_us/ { print $2, $4, $6 } /^overhead/ { print $2, $4 }')
    md "| ${us} µs | $1 µs | $2 µs | $3 µs | $4% | $5% |"
done
[ -d "$FASHION" ] || { md ""; md "(Fashion-MNIST not found at $FASHION: end-to-end runs skipped)"; exit 0; }
for i in $(seq "$RUNS"); do
    cat > "$TMP/s$i.json" <<JSON
{"name": "tro", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 6400, "test_subset": 200},
 "algorithm": {"name": "ssgd"}, "workers": 2, "batch_size": 64, "epochs": 1, "seed": $i, "log_every": 0}
JSON
    $MPIRUN -np 2 $WORKER --spec "$TMP/s$i.json" --metrics "$TMP/a$i.jsonl" >/dev/null 2>&1 || exit 1
    $MPIRUN -np 2 $WORKER --spec "$TMP/s$i.json" --metrics "$TMP/b$i.jsonl" --trace "$TMP/b$i.trace" >/dev/null 2>&1 || exit 1
done
med_step() { jq -r 'select(.kind == "step" and .rank == 0) | .step_s' "$1" | median; }
a=$(for i in $(seq "$RUNS"); do med_step "$TMP/a$i.jsonl"; done | awk '{ print $1 * 1000 }' | meansd 3)
b=$(for i in $(seq "$RUNS"); do med_step "$TMP/b$i.jsonl"; done | awk '{ print $1 * 1000 }' | meansd 3)
md ""
md "LeNet-5 ssgd, 2 ranks, batch 64, median step of rank 0 per run, mean ± sd over $RUNS seeds:"
md "$a ms without --trace, $b ms with it."
