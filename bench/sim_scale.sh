# Scale of the simulated cluster (issue 12): a 128-rank simulated job, LeNet-5 on
# Fashion-MNIST, a few hundred steps, on this machine. Reports what it costs here (wall
# time, CPU time, peak memory of the whole simulation) and what it simulates (simulated
# seconds, steps, accuracy). Targets: under 10 minutes and under 8 GB.
#   ssgd:  128 workers x batch 16, 10 epochs = 290 synchronous steps (allreduce of 61,706
#          floats across 128 ranks every step), 10 Gbit/s links, deterministic cost model
#   asgd:  128 workers + a parameter server, 1 epoch = 3,750 pushes
# The ranks share one copy of the data set (worker/sim.h); the real computation still runs
# (the cost model only decides the simulated time), so CPU time is what a quiet 2-core
# machine needs: wall time on a loaded machine is longer by the load (the figure printed
# beside it). Simulated figures do not depend on the load.
#   sh bench/sim_scale.sh            (needs make smpi; SCALE_WORKERS=N to change 128)
. bench/lib.sh
SIM=$BUILD/pacer-sim
command -v smpirun >/dev/null 2>&1 || { md "(sim_scale: libsimgrid-dev not installed: skipped)"; exit 0; }
[ -x "$SIM" ] && [ -x build-smpi/pacer-worker ] || { echo "sim_scale: make smpi first"; exit 1; }
[ -d /usr/share/datasets/fashion-mnist ] || { md "(sim_scale: Fashion-MNIST not installed: skipped)"; exit 0; }
N=${SCALE_WORKERS:-128}
run() { # NAME ALGORITHM EPOCHS
    jq -n --argjson n "$N" --arg a "$2" --argjson e "$3" '{
        name: "scale", model: "lenet5", workers: $n, batch_size: 16, epochs: $e, seed: 1, log_every: 0,
        dataset: {name: "fashion-mnist", test_subset: 2000}, optimizer: {lr: 0.05, momentum: 0.9},
        algorithm: {name: $a}, simulate: {deterministic: true}}' >"$TMP/$1.json"
    # 128 asynchronous workers: gradients ~127 updates stale; plain SGD at a small rate
    # (momentum 0.9 at lr 0.01 diverges).
    if [ "$2" != ssgd ]; then
        jq '.optimizer = {lr: 0.002, momentum: 0}' "$TMP/$1.json" >"$TMP/$1.j" && mv "$TMP/$1.j" "$TMP/$1.json"
    fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$SIM" --spec "$TMP/$1.json" --summary "$TMP/$1.out" >"$TMP/$1.log" 2>&1 || { tail -20 "$TMP/$1.log"; exit 1; }
    line=$(grep '^pacer-sim: done:' "$TMP/$1.log")
    # pacer-sim: done: S simulated s in W s on this machine (C s of CPU), peak memory M MB
    wall=$(echo "$line" | sed 's/.* in \([0-9.]*\) s on this machine.*/\1/')
    cpu=$(echo "$line" | sed 's/.*(\([0-9.]*\) s of CPU).*/\1/')
    mem=$(echo "$line" | sed 's/.*peak memory \([0-9]*\) MB.*/\1/')
    ranks=$(jq '.per_rank | length' "$TMP/$1.out")
    md "| $2 | $ranks | $(jq .steps "$TMP/$1.out") | $(jq '.simulated_wall_s * 1000 | round / 1000' "$TMP/$1.out") | $(jq '.test_accuracy * 1000 | round / 1000' "$TMP/$1.out") | $wall | $cpu | $load | $mem |"
}
md ""
md "### Simulated cluster at scale ($N workers, LeNet-5 / Fashion-MNIST, deterministic; bench/sim_scale.sh)"
md ""
md "$(date -u +%Y-%m-%d), $(nproc) cores, $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//'), SimGrid $(smpirun -version 2>/dev/null | head -1 | sed 's/.*version //'), one run each"
md ""
md "| algorithm | ranks | steps | simulated s | test acc | wall s here | CPU s | load avg at start | peak memory MB |"
md "|---|---|---|---|---|---|---|---|---|"
run ssgd ssgd 10
run asgd asgd 1
