# Exact staleness accounting (issue 4). With --ps-round-robin the parameter server takes
# pushes in worker order 1, 2, 3, 1, 2, 3, ..., so every staleness value is known in
# advance: each epoch starts with all workers reading the same version, so its first three
# updates have tau 0, 1, 2, and every later one tau = workers - 1 = 2. With 960 samples and
# batch 32 an epoch is 30 updates: over 2 epochs the histogram is exactly
# {0: 2, 1: 2, 2: 56}; per worker {0: 2, 2: 18}, {1: 2, 2: 18}, {2: 20}.
# The same known sequence scripts optimizer.async_momentum "compensated" (issue 29): the
# parameter server's smoothed staleness starts at workers - 1 = 2 and takes each applied
# update's tau with weight 0.05; the momentum it applies at the end is
# 1 - (1 - 0.9)(1 + that), docs/JOB_SPEC.md "Asynchronous momentum".
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat > "$TMP/spec.json" <<JSON
{"name": "st", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 960, "test_subset": 200},
 "algorithm": {"name": "asgd"}, "workers": 3, "batch_size": 32, "epochs": 2, "seed": 3, "log_every": 0,
 "optimizer": {"lr": 0.02, "momentum": 0.9, "async_momentum": "compensated"}}
JSON
$MPIRUN -np 4 $WORKER --spec "$TMP/spec.json" --ps-round-robin --summary "$TMP/s.json" --metrics "$TMP/m.jsonl" \
    || fail "training failed"
check() {
    got=$(jq -c "$1" "$TMP/s.json")
    [ "$got" = "$2" ] || fail "$1 = $got, want $2"
    echo "ok: $1 = $got"
}
check '.staleness.hist' '[2,2,56,0,0,0,0,0,0]'
check '[.staleness.count, .staleness.max, .staleness.p50, .staleness.p95]' '[60,2,2,2]'
check '[.per_rank[1:][].staleness.hist[0:3]]' '[[2,0,18],[0,2,18],[0,0,20]]'
check '.per_rank[0].role' '"ps"'
# The metrics records carry the same counts: each worker's last record.
last=$(jq -s -c '[.[] | select(.role == "worker")] | group_by(.rank) | map(.[-1].staleness.hist[0:3])' "$TMP/m.jsonl")
[ "$last" = '[[2,0,18],[0,2,18],[0,0,20]]' ] || fail "metrics records' staleness $last"
echo "ok: metrics records agree: $last"
# The compensated momentum on that scripted staleness.
want=$(awk 'BEGIN { t = 2; for (e = 0; e < 2; e++) for (i = 0; i < 30; i++) t = (1 - 0.05) * t + 0.05 * (i < 3 ? i : 2)
                    printf "%.9f %.6f", t, 1 - (1 - 0.9) * (1 + t) }')
got=$(jq -r '.parameter_server.momentum | "\(.staleness_smoothed) \(.applied) \(.mode) \(.requested)"' "$TMP/s.json")
echo "$got" | awk -v w="$want" '{ split(w, x, " ")
    exit !($1 - x[1] < 1e-9 && x[1] - $1 < 1e-9 && $2 - x[2] < 2e-6 && x[2] - $2 < 2e-6 && $3 == "compensated" && $4 == 0.9) }' ||
    fail "compensated momentum: smoothed staleness, applied, mode, requested = $got; want $want compensated 0.9"
echo "ok: compensated momentum on the scripted staleness: $got (want $want)"
