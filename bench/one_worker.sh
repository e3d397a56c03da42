# Throughput accounting (issue 11): the same spec as sgd (one process) and as asgd with
# one worker (a parameter server and one worker, 2 processes) must report
# train_samples_per_s within 10% of each other: asgd computes exactly sgd's steps, and
# the PS's updates are not counted as samples. RUNS alternating runs of each (default 5),
# mean and standard deviation, then the ratio of the means. Batch 64 as in
# examples/lenet5-fashion.json: asgd also pays a push and a reply of the weights per step
# (~0.5 ms for LeNet-5 through Open MPI's shared memory here), about 15% of a batch-32
# step and 8% of a batch-64 one. A timing comparison, so only a quiet machine gives
# figures worth quoting (tests/integration/throughput_accounting.sh checks the accounting
# itself exactly).
. bench/lib.sh
RUNS=${RUNS:-5}
cat > "$TMP/s.json" <<JSON
{"name": "one", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 12800, "test_subset": 500},
 "algorithm": {"name": "sgd"}, "workers": 1, "batch_size": 64, "epochs": 1, "seed": 5, "log_every": 0}
JSON
sed 's/"sgd"/"asgd"/' "$TMP/s.json" > "$TMP/a.json"
: > "$TMP/sgd"; : > "$TMP/asgd"
for i in $(seq "$RUNS"); do
    $WORKER --spec "$TMP/s.json" --summary "$TMP/o.json" >/dev/null 2>&1 || exit 1
    jq .train_samples_per_s "$TMP/o.json" >> "$TMP/sgd"
    $MPIRUN -np 2 $WORKER --spec "$TMP/a.json" --summary "$TMP/o.json" >/dev/null 2>&1 || exit 1
    jq .train_samples_per_s "$TMP/o.json" >> "$TMP/asgd"
done
stats() { awk '{ s += $1; q += $1 * $1; n++ } END { m = s / n; v = n > 1 ? (q - n * m * m) / (n - 1) : 0; printf "%.0f %.0f", m, sqrt(v > 0 ? v : 0) }' "$1"; }
set -- $(stats "$TMP/sgd"); sm=$1 ssd=$2
set -- $(stats "$TMP/asgd"); am=$1 asd=$2
md ""
md "### One worker: sgd against asgd, train_samples_per_s (\`sh bench/one_worker.sh\`, $RUNS runs each, $(nproc) cores)"
md ""
md "| sgd (mean ± sd) | asgd, 1 worker + PS (mean ± sd) | asgd / sgd |"
md "|---|---|---|"
md "| $sm ± $ssd | $am ± $asd | $(ratio "$am" "$sm") |"
