# pacer-worker --benchmark N (issue 14's pre-flight, the worker side): one process measures
# this host's speed for a job's model with the steps training books, and reports it as
# one JSON object on stdout and in --summary FILE. Bad input gets exit 2 and one line.
# (No speed is asserted: only that a positive one was measured.)
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian dataset-fashion-mnist)"
cat >"$TMP/s.json" <<JSON
{"model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 2, "batch_size": 32,
 "dataset": {"train_subset": 512}, "emulate": {"slowdown": [4, 1]}}
JSON
$WORKER --spec "$TMP/s.json" --benchmark 4 --summary "$TMP/b.json" >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "--benchmark 4 exited $?"; }
grep -q '^{"benchmark":' "$TMP/out" || { cat "$TMP/out"; fail "no JSON line on stdout"; }
[ "$(json "$TMP/b.json" .benchmark.steps)" = 4 ] || fail "steps: $(cat "$TMP/b.json")"
[ "$(json "$TMP/b.json" .benchmark.batch)" = 32 ] || fail "batch: $(cat "$TMP/b.json")"
# Four timed steps of 32 (the two warm-up steps are not counted).
[ "$(json "$TMP/b.json" .benchmark.samples)" = 128 ] || fail "samples: $(cat "$TMP/b.json")"
[ "$(json "$TMP/b.json" .benchmark.model)" = lenet5 ] || fail "model: $(cat "$TMP/b.json")"
at_least samples_per_s "$(json "$TMP/b.json" .benchmark.samples_per_s)" 0.001
grep -q "^training " "$TMP/out" && fail "--benchmark trained"
echo "ok: --benchmark 4: 128 samples timed, $(json "$TMP/b.json" .benchmark.samples_per_s) samples/s on $(json "$TMP/b.json" .benchmark.device)"
# A parameter-server spec measures a worker's compute (rank 1), not the server's.
sed 's/"ssgd"/"dc-asgd"/' "$TMP/s.json" >"$TMP/ps.json"
$WORKER --spec "$TMP/ps.json" --benchmark 2 --summary "$TMP/p.json" >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "--benchmark with dc-asgd exited $?"; }
[ "$(json "$TMP/p.json" .benchmark.samples)" = 64 ] || fail "dc-asgd samples: $(cat "$TMP/p.json")"
echo "ok: dc-asgd spec: a worker rank's compute measured"
expect_error 2 "--benchmark 0: must be a step count from 1 to 100000" $WORKER --spec "$TMP/s.json" --benchmark 0
expect_error 2 "--benchmark x: must be a step count from 1 to 100000" $WORKER --spec "$TMP/s.json" --benchmark x
# The worker's other numeric options are just as strict: garbage is an error, not a silent 0.
expect_error 2 "--time-budget abc: must be a time in seconds" $WORKER --spec "$TMP/s.json" --time-budget abc
expect_error 2 "--time-budget nan: must be a time in seconds" $WORKER --spec "$TMP/s.json" --time-budget nan
expect_error 2 "--stop-after-steps 12x: must be a global step" $WORKER --spec "$TMP/s.json" --stop-after-steps 12x
expect_error 2 "--hpsgd-round-steps 0: must be a step count" $WORKER --spec "$TMP/s.json" --hpsgd-round-steps 0
expect_error 2 "measures one host with one process, but OMPI_COMM_WORLD_SIZE=2" \
    env OMPI_COMM_WORLD_SIZE=2 $WORKER --spec "$TMP/s.json" --benchmark 2
echo '{"model": "nope"}' >"$TMP/bad.json"
expect_error 2 "model: must be one of" $WORKER --spec "$TMP/bad.json" --benchmark 2
expect_error 1 "cannot write the benchmark" $WORKER --spec "$TMP/s.json" --benchmark 1 --summary "$TMP/no/such/dir/b.json"
