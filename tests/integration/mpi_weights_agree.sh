# The model averages of the synchronous family really happen (an accuracy within a few
# points of ssgd would not show it): with --weight-digest every rank writes a hash of its
# weights when training starts, after each step and at the epoch end; every rank starts
# from the same (broadcast) weights, and
#   - local-sgd (4 ranks, local_steps 4): all ranks hold identical weights right after
#     every 4th step and at the epoch end, and do NOT between averages (so the check can
#     fail: identical weights everywhere would mean no local steps);
#   - hier-bsp (4 ranks, groups {0,1} {2,3}, k_steps 4): the two ranks of a group are
#     identical after every step (synchronous inside the group); all four right after
#     every 4th step and at the epoch end, and the groups differ between averages;
#   - hpsgd (4 ranks, --hpsgd-round-steps 2: each round merges after exactly 2 local
#     steps): identical at the epoch end (every replica = the merged global model G) and
#     different after every step before it. A merge does not make the replicas equal: a
#     replica keeps its own window, w = G + d (worker/algo_hpsgd.c, merge()), so the
#     merges themselves are counted exactly instead (9 in the epoch, 2 at its end).
# 2560 samples, batch 32: 20 steps of 4 x 32.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
run() { # ALGORITHM [OPTIONS...]
    a=$1
    shift
    cat >"$TMP/$a.json" <<JSON
{"name": "agree-$a", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 2560, "test_subset": 200},
 "algorithm": {"name": "$a", "group_size": 2, "k_steps": 4, "local_steps": 4}, "workers": 4, "batch_size": 32,
 "epochs": 1, "seed": 5, "log_every": 0, "optimizer": {"lr": 0.05, "momentum": 0.9}}
JSON
    $MPIRUN -np 4 $WORKER --spec "$TMP/$a.json" --weight-digest "$TMP/$a" "$@" >"$TMP/$a.log" 2>&1 ||
        { cat "$TMP/$a.log"; fail "$a failed"; }
    for r in 0 1 2 3; do
        [ "$(wc -l <"$TMP/$a.rank$r")" = 22 ] || fail "$a rank $r wrote $(wc -l <"$TMP/$a.rank$r") digests, want the start + 20 steps + 1 epoch end"
    done
    # One line per record: STEP TAG D0 D1 D2 D3 (TAG "start", "step" or "epoch").
    paste -d' ' "$TMP/$a.rank0" "$TMP/$a.rank1" "$TMP/$a.rank2" "$TMP/$a.rank3" |
        awk '{ if ($3 == "epoch" || $3 == "start") print $1, $3, $2, $5, $8, $11; else print $1, "step", $2, $4, $6, $8 }' >"$TMP/$a.table"
    [ "$(head -1 "$TMP/$a.table" | cut -d' ' -f2)" = start ] || fail "$a: the first digest is not the start's"
}
# check ALGORITHM AWK-CONDITION-FOR-"ALL EQUAL" AWK-CONDITION-FOR-"GROUPS EQUAL"
check() {
    awk -v period="$2" -v grouped="$3" '
        { all = ($3 == $4 && $4 == $5 && $5 == $6); groups = ($3 == $4 && $5 == $6)
          want = ($2 == "epoch" || $2 == "start" || $1 % period == 0)
          if (want && !all) { print "step " $1 " " $2 ": ranks differ right after an average (or at the start)"; bad = 1 }
          if (!want && all) { print "step " $1 ": all ranks identical between averages"; bad = 1 }
          if (grouped && !groups) { print "step " $1 ": the ranks of a group differ"; bad = 1 }
          if (!want) between++ }
        END { if (!between) { print "no step between averages"; bad = 1 } exit bad }' "$TMP/$1.table" ||
        { cat "$TMP/$1.table"; fail "$1: weights across ranks are not what its averaging promises"; }
}
run local-sgd
check local-sgd 4 0
echo "ok: local-sgd: identical weights on all 4 ranks after steps 4, 8, ..., 20 and at the epoch end, different in between"
run hier-bsp
check hier-bsp 4 1
echo "ok: hier-bsp: groups identical after every step; all 4 ranks after every 4th step and at the epoch end, groups apart in between"
run hpsgd --hpsgd-round-steps 2
# Period 1000: no step (1..20) is an average, only the start and the epoch end.
check hpsgd 1000 0
grep -q '^hpsgd: 11 merges in 20 steps' "$TMP/hpsgd.log" || { grep '^hpsgd:' "$TMP/hpsgd.log"; fail "hpsgd did not merge every 2 steps (9 merges in steps 2, 4, ..., 18, 2 at the epoch end)"; }
echo "ok: hpsgd with rounds of 2 local steps: 11 merges in 20 steps, identical weights on all ranks at the epoch end, different before it"
