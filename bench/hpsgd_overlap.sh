# What hpsgd's overlap of communication with computation saves (issue 3), measured so the
# subject and the baseline do the same work: 4 ranks, LeNet-5 batch 32, rounds of a fixed
# K local steps (--hpsgd-round-steps K, so every rank starts the same rounds at the same
# steps) and --comm-baseline, which also runs a blocking MPI_Allreduce of the same size
# on each round, on a copy of the round buffer just written (same cache state), after an
# untimed barrier. Reported per round, from the worker's closing "hpsgd:" line:
#   - in MPI: the time inside every MPI call of the rounds (their start, the MPI_Test
#     calls between layers and in the step, the waits); on one host Open MPI moves and
#     sums the data inside those calls, so this is work, not only waiting;
#   - of which in MPI_Wait: blocked with nothing else to do;
#   - the blocking allreduce of the same rounds, and what overlap saves against it:
#     1 - (in MPI per round) / (blocking allreduce per round).
# RUNS runs per K (default 3): mean and spread.
. bench/lib.sh
RUNS=${RUNS:-3}
KS=${KS:-1 2 4}
cat >"$TMP/h.json" <<JSON
{"name": "hp", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 20480, "test_subset": 500},
 "algorithm": {"name": "hpsgd"}, "workers": 4, "batch_size": 32, "epochs": 1, "log_every": 0,
 "optimizer": {"lr": 0.1, "momentum": 0}}
JSON
md ""
md "### hpsgd: what overlap saves (\`RUNS=$RUNS sh bench/hpsgd_overlap.sh\`)"
md ""
md "| round length K | merges | in MPI per round | in MPI_Wait per round | blocking allreduce per round | overlap saves (mean, min..max of $RUNS) |"
md "|---|---|---|---|---|---|"
for k in $KS; do
    : >"$TMP/k$k"
    for i in $(seq "$RUNS"); do
        line=$($MPIRUN -np 4 $WORKER --spec "$TMP/h.json" --hpsgd-round-steps "$k" --comm-baseline 2>&1 | grep '^hpsgd:') ||
            { echo "hpsgd_overlap: run failed" >&2; exit 1; }
        # hpsgd: M merges in S steps; in MPI X s (U us per merge), of which waiting in MPI_Wait W s;
        #   a blocking allreduce of the same R rounds: B s (V us per round), so overlap saves P% of it
        echo "$line" | sed -n 's/^hpsgd: \([0-9]*\) merges.* in MPI \([0-9.]*\) s.*MPI_Wait \([0-9.]*\) s.*same \([0-9]*\) rounds: \([0-9.]*\) s.*saves \(-*[0-9.]*\)%.*/\1 \2 \3 \4 \5 \6/p' >>"$TMP/k$k"
    done
    [ -s "$TMP/k$k" ] || { echo "hpsgd_overlap: no baseline in the hpsgd line" >&2; exit 1; }
    md "$(awk -v k="$k" '{ n++; m += $1; mpi += $2 / $1; w += $3 / $1; b += $5 / $4; s[n] = $6; t += $6 }
        END { lo = s[1]; hi = s[1]; for (i = 2; i <= n; i++) { if (s[i] < lo) lo = s[i]; if (s[i] > hi) hi = s[i] }
              printf "| %d | %.0f | %.0f us | %.0f us | %.0f us | %.1f%% (%.1f..%.1f) |", k, m / n, 1e6 * mpi / n, 1e6 * w / n, 1e6 * b / n, t / n, lo, hi }' "$TMP/k$k")"
done
md ""
md "4 ranks share the machine's cores: on a host with a core per rank the blocking allreduce is the transfer alone,"
md "and what overlap can save is the waiting for the slowest rank, which this table counts in both columns alike."
