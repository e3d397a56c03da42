# A notice to stop costs ssgd no collective of its own: it rides in the gradient
# all-reduce's last extra (worker/sigterm.h, sigterm_slot_pack). A PMPI shim (built here
# with mpicc, preloaded into both ranks) counts every rank's collectives; two runs of 2
# ranks of LeNet-5 that stop after 10 and after 30 steps of one epoch differ by the
# steps' collectives only, so their difference over 20 is the collectives a step makes:
# one all-reduce for ssgd uncompressed (two before the notice rode along). bf16's step
# (its 16-byte extras a second all-reduce) and the stop on notice itself are notice.sh's
# and mpi_compress.sh's.
# The same shim sends a notice during start-up (NOTICE_AT_INIT): rank 1 SIGTERMs itself
# before MPI_Init, rank 0 right after it. Both ranks hear it (the handler is installed
# first thing and MPI_Init keeps it), train to their first step boundary, agree there,
# rank 0 checkpoints step 1 and leaves the note, and both exit 75, "interrupted with
# notice", not killed by the default action.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
command -v mpicc >/dev/null 2>&1 || skip "no mpicc to build the PMPI counting shim"
cat >"$TMP/count.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
static long calls;
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    const char *at = getenv("NOTICE_AT_INIT"), *r = getenv("OMPI_COMM_WORLD_RANK");
    int notice = at && *at == '1', rank = r ? atoi(r) : 0;
    if (notice && rank == 1) raise(SIGTERM);
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (notice && rank == 0) raise(SIGTERM);
    return rc;
}
#define COUNTED(ret, name, params, args) \
    ret name params { calls++; return P##name args; }
COUNTED(int, MPI_Allreduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c), (s, r, n, t, o, c))
COUNTED(int, MPI_Iallreduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c, MPI_Request *q),
        (s, r, n, t, o, c, q))
COUNTED(int, MPI_Bcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c), (b, n, t, root, c))
COUNTED(int, MPI_Barrier, (MPI_Comm c), (c))
COUNTED(int, MPI_Reduce_scatter_block, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),
        (s, r, n, t, o, c))
COUNTED(int, MPI_Allgather, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
        (s, sn, st, r, rn, rt, c))
int MPI_Finalize(void)
{
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", getenv("COUNT_OUT"), rank);
    FILE *f = fopen(path, "w");
    if (f) fprintf(f, "%ld\n", calls), fclose(f);
    return PMPI_Finalize();
}
C
mpicc -shared -fPIC -O1 -o "$TMP/count.so" "$TMP/count.c" || fail "cannot build the PMPI counting shim"
cat >"$TMP/c.json" <<JSON
{"name": "c", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 6400, "test_subset": 200},
 "algorithm": {"name": "ssgd"}, "workers": 2, "batch_size": 32, "epochs": 1,
 "seed": 3, "log_every": 0, "optimizer": {"lr": 0.05, "momentum": 0.9}}
JSON
counted() { # STEPS - the collectives rank 0 made in a run stopped after STEPS steps
    rm -f "$TMP/n$1".*
    $MPIRUN -np 2 -x LD_PRELOAD="$TMP/count.so" -x COUNT_OUT="$TMP/n$1" $WORKER --spec "$TMP/c.json" \
        --stop-after-steps "$1" >"$TMP/r$1.log" 2>&1 || { cat "$TMP/r$1.log"; fail "the run of $1 steps failed"; }
    [ -s "$TMP/n$1.0" ] && [ -s "$TMP/n$1.1" ] || fail "the shim counted nothing (preload not taken?)"
    [ "$(cat "$TMP/n$1.0")" = "$(cat "$TMP/n$1.1")" ] || fail "ranks made $(cat "$TMP/n$1.0") and $(cat "$TMP/n$1.1") collectives"
    cat "$TMP/n$1.0"
}
short=$(counted 10)
long=$(counted 30)
per_step=$(((long - short) / 20))
[ $((long - short)) = $((per_step * 20)) ] || fail "collectives $short (10 steps), $long (30 steps): not a whole number a step"
equals_num "ssgd's collectives a step (the notice rides in the gradient all-reduce)" "$per_step" 1
echo "ok: $short collectives in 10 steps, $long in 30: $per_step a step"

# A notice while the ranks start: the attempt stops after step 1 with its checkpoint.
jq --arg d "$TMP/ck" '.checkpoint = {"dir": $d, "every_steps": 1000}' "$TMP/c.json" >"$TMP/s.json"
rc=0
$MPIRUN -np 2 -x LD_PRELOAD="$TMP/count.so" -x COUNT_OUT="$TMP/s" -x NOTICE_AT_INIT=1 $WORKER --spec "$TMP/s.json" \
    >"$TMP/s.log" 2>&1 || rc=$?
[ "$rc" = 75 ] || { tail -20 "$TMP/s.log"; fail "a notice during start-up: exit status $rc, want 75 (interrupted with notice)"; }
grep -q "notice: signal 15 heard by rank 1: every rank stops after step 1 " "$TMP/s.log" ||
    { tail -20 "$TMP/s.log"; fail "no notice line for step 1"; }
jq -e '.at_step == 1 and .checkpoint_step == 1 and .rank == 1 and .signal == 15' "$TMP/ck/c.notice" >/dev/null ||
    { cat "$TMP/ck/c.notice"; fail "the notice's note does not say step 1, rank 1, signal 15"; }
[ -s "$TMP/ck/c.ckpt" ] || fail "no checkpoint in $TMP/ck: $(ls "$TMP/ck")"
echo "ok: a SIGTERM to both ranks during start-up: exit 75 after step 1, its checkpoint and note"
