# --time-budget S counts seconds of training only: evaluations at epoch ends are left out,
# for the synchronous loop and the parameter server alike, so "equal time" comparisons
# (bench/sim_async.sh, bench/sim_sync.sh, bench/async_compare.sh) give every algorithm
# the same training time whatever its evaluations cost. Checked on simulated time
# (deterministic), where it is exact: training time ends within one step of the budget,
# and the run's wall time is longer by the evaluations.
. tests/integration/sim_lib.inc
need_sim
need_fashion
B=0.5
check() { # NAME MAX_OVERSHOOT MIN_EVAL
    o=$TMP/$1.out
    h=$(awk -v m="$2" 'BEGIN { print m / 2 }')
    within "$1 train_s - budget" "$(json "$o" ".train_s - $B")" "$h" "$h"
    at_least "$1 wall_s - train_s (the evaluations)" "$(json "$o" '.wall_s - .train_s')" "$3"
}
# ssgd on [1,1,2,4]: a step lasts as long as the 4x slower worker's (32 samples at
# 2.5 Gflop/s: 0.032 s); 8 steps an epoch (0.26 s), and every rank evaluates 256 samples
# at each end (rank 0, which writes the summary, at 10 Gflop/s: 0.02 s each, 2 in all).
sim_spec "$TMP/ssgd.json" '{"epochs": 1000, "dataset": {"test_subset": 256}, "simulate": {"slowdown": [1, 1, 2, 4]}}'
sim_run ssgd -- --time-budget $B
check ssgd 0.033 0.04
sim_spec "$TMP/asgd.json" '{"epochs": 1000, "dataset": {"test_subset": 256}, "optimizer": {"lr": 0.01}, "algorithm": {"name": "asgd"}, "simulate": {"slowdown": [1, 1, 2, 4]}}'
sim_run asgd -- --time-budget $B
# The server checks the budget after each push: pushes come at most one slow step (0.032 s)
# apart (at an epoch's end it waits for the slowest worker). It evaluates on its own
# 10 Gflop/s host, 0.02 s at each epoch end (32 pushes an epoch) and at the stop.
check asgd 0.033 0.04
