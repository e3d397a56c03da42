# Specs that cannot run fail before training with a clear message (issues 3 and 4):
# a world size that is not the spec's workers (or workers + 1 for a parameter server),
# slowdown lists of the wrong length, a factor below 1, a multi-worker job without mpirun.
. tests/lib.sh
cat > "$TMP/s4.json" <<JSON
{"model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 4, "dataset": {"train_subset": 512}}
JSON
expect_error 2 "spec asks for 4 workers, so algorithm ssgd needs 4 processes, but mpirun started 3" \
    $MPIRUN -np 3 $WORKER --spec "$TMP/s4.json"
expect_error 2 "start it with mpirun -np 4" $WORKER --spec "$TMP/s4.json"
cat > "$TMP/len.json" <<JSON
{"model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 4, "emulate": {"slowdown": [1, 2, 4]}}
JSON
expect_error 2 "emulate.slowdown: has 3 entries, workers is 4" $MPIRUN -np 4 $WORKER --spec "$TMP/len.json"
cat > "$TMP/f.json" <<JSON
{"model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 2, "emulate": {"slowdown": [1, 0.5]}}
JSON
expect_error 2 "emulate.slowdown\[1\]: must be between 1 and 1000" $MPIRUN -np 2 $WORKER --spec "$TMP/f.json"
# Asynchronous algorithms: rank 0 is the parameter server, so world = workers + 1.
cat > "$TMP/a3.json" <<JSON
{"model": "lenet5", "algorithm": {"name": "asgd"}, "workers": 3, "dataset": {"train_subset": 512}}
JSON
expect_error 2 "spec asks for 3 workers, so algorithm asgd needs 4 processes, but mpirun started 3" \
    $MPIRUN -np 3 $WORKER --spec "$TMP/a3.json"
expect_error 2 "start it with mpirun -np 4" $WORKER --spec "$TMP/a3.json"
