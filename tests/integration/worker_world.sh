# A worker whose launch did not build the MPI world the job needs stops before training,
# with a message that says what happened (issue 14), instead of training N separate
# models. A process knows it was meant to be one of N from the launcher's variables
# (OMPI_COMM_WORLD_SIZE, PMI_SIZE, srun's SLURM_STEP_NUM_TASKS: srun --mpi=none sets
# only the last) or from --world N, which the coordinator passes to every attempt.
# (The Slurm test runs the real thing: srun --mpi=none over two nodes.)
. tests/lib.sh
cat >"$TMP/s2.json" <<JSON
{"model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 2, "dataset": {"train_subset": 512}}
JSON
cat >"$TMP/s1.json" <<JSON
{"model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 1, "dataset": {"train_subset": 512}}
JSON
# Two singletons of one srun step without an MPI plugin: each is alone in its world.
SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=0 $WORKER --spec "$TMP/s2.json" >"$TMP/p0" 2>&1 &
p0=$!
SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=1 $WORKER --spec "$TMP/s2.json" >"$TMP/p1" 2>&1
s1=$?
wait $p0
s0=$?
for k in 0 1; do
    eval st=\$s$k
    [ "$st" -eq 2 ] || { cat "$TMP/p$k"; fail "singleton $k exited $st, want 2"; }
    grep -q "alone in its MPI world, but it was started as one of 2 processes (SLURM_STEP_NUM_TASKS=2)" "$TMP/p$k" ||
        { cat "$TMP/p$k"; fail "singleton $k did not say why it stopped"; }
    grep -q "^training " "$TMP/p$k" && fail "singleton $k started training"
done
echo "ok: two srun singletons (SLURM_STEP_NUM_TASKS=2, no PMIx): both stop with exit 2 and say so"
# The same for a one-worker spec, where the world size alone cannot tell (1 = 1).
expect_error 2 "started as one of 3 processes (SLURM_STEP_NUM_TASKS=3)" \
    env SLURM_STEP_NUM_TASKS=3 $WORKER --spec "$TMP/s1.json"
expect_error 2 "started as one of 2 processes (OMPI_COMM_WORLD_SIZE=2)" \
    env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 $WORKER --spec "$TMP/s1.json"
# --world N: the coordinator's word.
expect_error 2 "started as one of 3 processes (--world 3)" $WORKER --spec "$TMP/s1.json" --world 3
expect_error 2 "the coordinator expects 3 processes (--world 3), but MPI started 2" \
    $MPIRUN -np 2 $WORKER --spec "$TMP/s2.json" --world 3
expect_error 2 "--world 0: must be a process count" $WORKER --spec "$TMP/s1.json" --world 0
expect_error 2 "--world x: must be a process count" $WORKER --spec "$TMP/s1.json" --world x
# A variable that is not a count is not believed: a one-process run still runs.
sed 's/"ssgd"/"sgd"/' "$TMP/s1.json" >"$TMP/sgd.json"
PMI_SIZE=garbage $WORKER --spec "$TMP/sgd.json" --stop-after-steps 1 >"$TMP/ok" 2>&1 ||
    { cat "$TMP/ok"; fail "PMI_SIZE=garbage stopped a one-process run"; }
echo "ok: PMI_SIZE=garbage is ignored"
# And a matching world trains.
$MPIRUN -np 2 $WORKER --spec "$TMP/s2.json" --world 2 --stop-after-steps 2 >"$TMP/ok2" 2>&1 ||
    { cat "$TMP/ok2"; fail "mpirun -np 2 --world 2 did not run"; }
echo "ok: mpirun -np 2 with --world 2 trains"
