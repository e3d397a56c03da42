# bench/sim_validate.sh - does the simulator predict real runs? (issue 12) Runs 2- and
# 4-rank ssgd and asgd jobs for real, over network namespaces with rate-limited links (the
# multi-host test's set-up: deploy/netns/up.sh, rsh.sh, shape.sh), then the same jobs on
# a simulated platform calibrated from this machine, and reports the simulator's error on
# the training time (train_s: training wall time, evaluations left out) of each.
#
#   sudo sh bench/sim_validate.sh        (root: network namespaces; about 5 minutes)
#
# Calibration, measured in the same run:
#   host speed  one undisturbed step: pacer-worker alone (sgd, LeNet-5, batch 32) for
#               CAL_STEPS steps; the step's compute time is the median of the steps'
#               compute_s (forward and backward: what the worker's emulated slowdown
#               multiplies), and the simulated host speed is the cost model's FLOPs of
#               that (pacer-platform --cost) over it;
#   jitter      how much those steps vary: simulate.jitter = (p90 - p10) / (1.6 x median)
#               (a factor uniform in [1 - j, 1 + j] has that spread), so that equal
#               simulated workers drift apart as the real ones do instead of running in
#               lockstep (docs/JOB_SPEC.md);
#   links       every worker host's link limited to RATE_MBIT (tbf, or netem rate with no
#               delay where the kernel has netem) both ways: the simulated links are
#               RATE_MBIT with LATENCY_US (default 50 us: veth, bridge and TCP stack; no
#               ping here to measure it).
#   network     NET_MODEL=calibrated (the default) makes both sides speak the same MPI
#               protocol and charges the link what it really delivers:
#               - Open MPI sends every message up to EAGER_BYTES (default 1 MiB, above
#                 pacer's largest: a LeNet-5 gradient or push is 247 KB) eagerly
#                 (btl_tcp_eager_limit), and SMPI does too (smpi/send-is-detached-thresh,
#                 smpi/async-small-thresh). With Open MPI's default (64 KB) a larger
#                 message waits for the receiver's go-ahead, and on a shaped link that
#                 small reply (as we read it) queues behind the receiver's own outgoing
#                 data in the same FIFO: a raw 4-rank allreduce of the gradient took 40-44 ms against 31 ms
#                 eager, a delay a flow-level model has no notion of.
#               - the simulated link carries TCP payload at (MTU - 52) / (MTU + 14) of its
#                 rate (IP and TCP headers with timestamps; the shaper counts the Ethernet
#                 header): smpi/bw-factor, with smpi/lat-factor 1. SimGrid's defaults
#                 (0.94 and latency x 11.6 for large messages) come from another cluster.
#               NET_MODEL=simgrid keeps both defaults (Open MPI's protocol, SimGrid's
#               factors), as the first measurements in docs/RESULTS.md ran.
# Jobs: LeNet-5 / Fashion-MNIST, batch 32, STEPS steps per worker, one rank per namespace
# host, every worker slowed down emulate.slowdown = max(2, workers) (or SLOWDOWN) so that
# the ranks' computing (1/f of their time) fits in 1 of the 2 cores: the faithfulness condition of
# emulated slow nodes (docs/ARCHITECTURE.md). The simulated job has the same spec with
# the slowdown moved to simulate.slowdown (hosts f times slower) and "deterministic": true.
# Each real job runs REPS times (mean and sd); the simulation once (it is deterministic).
# The per-worker split of compute and communication (the first real run's) shows where
# a difference comes from. JOBS_TO_RUN picks jobs (default "ssgd:2 ssgd:4 asgd:2 asgd:4",
# algorithm:ranks); KEEP=DIR keeps every spec, summary and log.
#
# Real runs are timing-sensitive: on a machine loaded by other work their compute is
# slower than the calibrated step and the error grows. The report prints the load.
. bench/lib.sh
ROOT=$(pwd)
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
NETNS=$ROOT/deploy/netns
RATE_MBIT=${RATE_MBIT:-100}
LATENCY_US=${LATENCY_US:-50}
STEPS=${STEPS:-60}
REPS=${REPS:-3}
CAL_STEPS=${CAL_STEPS:-300}
NET_MODEL=${NET_MODEL:-calibrated}
EAGER_BYTES=${EAGER_BYTES:-1048576}
JOBS_TO_RUN=${JOBS_TO_RUN:-ssgd:2 ssgd:4 asgd:2 asgd:4}   # ALGO:RANKS
KEEP=${KEEP:-}    # a directory to keep every spec, summary and log in
SIM=$B/pacer-sim
[ "$(id -u)" -eq 0 ] || { echo "sim_validate: needs root (network namespaces)"; exit 1; }
for c in ip tc unshare flock mpirun jq smpirun; do
    command -v "$c" >/dev/null 2>&1 || { echo "sim_validate: $c not installed (make deps)"; exit 1; }
done
for f in "$B/pacer-worker" "$SIM" "$B/pacer-platform"; do
    [ -x "$f" ] || { echo "sim_validate: $f not built (make; make smpi)"; exit 1; }
done
[ -d /usr/share/datasets/fashion-mnist ] || { echo "sim_validate: Fashion-MNIST not installed"; exit 1; }

# One run at a time; names and a /24 of its own (not the multi-host test's).
netns_bench_up simvalidate psv- "${VALIDATE_NET:-10.78.0}"
shaped=""
for h in pw1 pw2 pw3 pw4; do
    shaped=$(sh "$NETNS/shape.sh" "$h" on 0ms "${RATE_MBIT}mbit") || { echo "sim_validate: cannot shape $h"; exit 1; }
done
netns_mpi_env "sh $NETNS/rsh.sh"
# NET_MODEL (above): pacer-sim's --cfg settings for the simulated side (words without
# blanks), and the real side's.
net_cfg=""
case $NET_MODEL in
    calibrated)
        mtu=$(ip netns exec "$(host_ns pw1)" cat /sys/class/net/eth0/mtu)
        bw_factor=$(awk -v m="$mtu" 'BEGIN { printf "%.4f", (m - 52) / (m + 14) }')
        export OMPI_MCA_btl_tcp_eager_limit="$EAGER_BYTES" OMPI_MCA_btl_tcp_max_send_size="$EAGER_BYTES"
        net_cfg="smpi/send-is-detached-thresh:$EAGER_BYTES smpi/async-small-thresh:$EAGER_BYTES"
        net_cfg="$net_cfg smpi/bw-factor:0:$bw_factor smpi/lat-factor:0:1"
        net_said="both sides send messages up to $EAGER_BYTES bytes eagerly; links charged at $bw_factor of their rate (MTU $mtu), latency x 1" ;;
    simgrid) net_said="Open MPI's and SimGrid's default protocol and network factors" ;;
    *) echo "sim_validate: NET_MODEL must be calibrated or simgrid"; exit 1 ;;
esac
sim_cfg="" smpirun_cfg=""
for c in $net_cfg; do sim_cfg="$sim_cfg --cfg $c" smpirun_cfg="$smpirun_cfg --cfg=$c"; done
# A rank waiting in MPI polls; yielding lets a computing rank of the same core go first,
# so the waiting ranks do not count against the cores the emulated demand must fit in.
export OMPI_MCA_mpi_yield_when_idle=1
export OPENBLAS_NUM_THREADS=1
printf 'pw1 slots=1\npw2 slots=1\npw3 slots=1\npw4 slots=1\n' >"$TMP/hostfile"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- calibration: one undisturbed step ----------------------------------------------
jq -n --argjson n $((32 * CAL_STEPS)) '{name: "cal", model: "lenet5", dataset: {name: "fashion-mnist",
    train_subset: $n, test_subset: 32}, batch_size: 32, epochs: 1, seed: 1, log_every: 0,
    optimizer: {lr: 0.01, momentum: 0.5}, algorithm: {name: "sgd"}}' >"$TMP/cal.json"
"$B/pacer-worker" --spec "$TMP/cal.json" --summary "$TMP/cal.out" --metrics "$TMP/cal.jsonl" >"$TMP/cal.log" 2>&1 ||
    { cat "$TMP/cal.log"; exit 1; }
steps_q() { jq -s --argjson q "$1" '[.[] | select(.kind == "step") | .compute_s] | sort | .[(length * $q | floor)]' "$TMP/cal.jsonl"; }
step_s=$(steps_q 0.5)
jitter=$(awk -v a="$(steps_q 0.1)" -v b="$(steps_q 0.9)" -v m="$step_s" 'BEGIN { j = (b - a) / (1.6 * m); if (j > 0.5) j = 0.5; printf "%.4f", j }')
cost=$("$B/pacer-platform" --cost lenet5)
gflops=$(echo "$cost" | jq --argjson t "$step_s" '32 * .train_flops / $t / 1e9')
md ""
md "### Simulator against real runs (\`sudo sh bench/sim_validate.sh\`)"
md ""
md "Calibration: an undisturbed LeNet-5 forward and backward pass (batch 32, median of $CAL_STEPS) takes $(awk -v t="$step_s" 'BEGIN { printf "%.2f", t * 1000 }') ms here,"
md "so a full-speed simulated host runs at $(awk -v g="$gflops" 'BEGIN { printf "%.2f", g }') Gflop/s; the steps' spread gives jitter $jitter; links: $shaped;"
md "simulated as ${RATE_MBIT} Mbit/s, ${LATENCY_US} us; network model $NET_MODEL: $net_said. $STEPS steps per worker, $REPS real runs per job."
md ""
md "| job | ranks | emulated slowdown | real train_s (mean ± sd) | simulated train_s | error | per worker, real: compute / communication + waiting (s) | simulated |"
md "|---|---|---|---|---|---|---|---|"

# ---- each job: real, then simulated --------------------------------------------------
job() { # ALGO WORKERS
    a=$1 w=$2
    np=$w; [ "$a" = asgd ] && np=$((w + 1))
    f=${SLOWDOWN:-$w}; [ "$f" -lt 2 ] && f=2
    jq -n --arg a "$a" --argjson w "$w" --argjson f "$f" --argjson n $((32 * w * STEPS)) '{name: "val", model: "lenet5",
        dataset: {name: "fashion-mnist", train_subset: $n, test_subset: 256}, workers: $w, batch_size: 32,
        epochs: 1, seed: 1, log_every: 0, optimizer: {lr: 0.01, momentum: 0.5}, algorithm: {name: $a},
        emulate: {slowdown: [range($w) | $f]}}' >"$TMP/$a$w.json"
    r=1
    : >"$TMP/$a$w.real"
    while [ $r -le "$REPS" ]; do
        ip netns exec "$(host_ns pc)" mpirun --allow-run-as-root -np $np --hostfile "$TMP/hostfile" \
            "$B/pacer-worker" --spec "$TMP/$a$w.json" --summary "$TMP/$a$w-$r.out" >"$TMP/$a$w-$r.log" 2>&1 9>&- ||
            { tail -20 "$TMP/$a$w-$r.log"; echo "sim_validate: real $a with $np ranks failed"; exit 1; }
        jq .train_s "$TMP/$a$w-$r.out" >>"$TMP/$a$w.real"
        r=$((r + 1))
    done
    jq --argjson g "$gflops" --argjson bw "$(awk -v r="$RATE_MBIT" 'BEGIN { print r / 1000 }')" --argjson l "$LATENCY_US" \
        --argjson j "$jitter" '.simulate = {gflops: $g, slowdown: .emulate.slowdown, bandwidth_gbps: $bw, latency_us: $l,
            deterministic: true, jitter: $j}
         | del(.emulate)' "$TMP/$a$w.json" >"$TMP/$a$w-sim.json"
    "$SIM" --spec "$TMP/$a$w-sim.json" --summary "$TMP/$a$w-sim.out" $sim_cfg >"$TMP/$a$w-sim.log" 2>&1 ||
        { tail -20 "$TMP/$a$w-sim.log"; echo "sim_validate: simulated $a with $np ranks failed"; exit 1; }
    sim=$(jq .train_s "$TMP/$a$w-sim.out")
    split='[.per_rank[] | select(.role == "worker")] | "\(map(.compute_s) | add / length * 100 | round / 100) / \(map(.comm_s + .idle_s) | add / length * 100 | round / 100)"'
    split_real=$(jq -r "$split" "$TMP/$a$w-1.out")
    split_sim=$(jq -r "$split" "$TMP/$a$w-sim.out")
    set -- $(awk '{ s += $1; q += $1 * $1; n++ } END { m = s / n; v = n > 1 ? (q - n * m * m) / (n - 1) : 0; if (v < 0) v = 0; print m, sqrt(v) }' "$TMP/$a$w.real")
    md "| $a | $np | $f | $(awk -v m="$1" -v s="$2" 'BEGIN { printf "%.2f ± %.2f", m, s }') | $(awk -v t="$sim" 'BEGIN { printf "%.2f", t }') | $(awk -v m="$1" -v t="$sim" 'BEGIN { printf "%+.1f%%", 100 * (t - m) / m }') | $split_real | $split_sim |"
    [ -n "$KEEP" ] && mkdir -p "$KEEP" && cp "$TMP/$a$w"* "$KEEP/"
    return 0
}
for j in $JOBS_TO_RUN; do
    a=${j%:*} np=${j#*:}
    [ "$a" = asgd ] && np=$((np - 1))
    job "$a" "$np"
done

# ---- raw transfers: where a job's difference comes from ------------------------------
# bench/allreduce_raw (ssgd's collective) and bench/incast_raw (3 workers' pushes reaching
# one host together, or 10 ms apart), for real on the same namespaces and simulated on the
# platform pacer-sim writes for a 4-worker job with the same network settings (the same
# programs built with smpicc). Medians of RAW_ITERS; RAW=0 leaves this out.
if [ "${RAW:-1}" != 0 ]; then
    RAW_ITERS=${RAW_ITERS:-20}
    for prog in allreduce_raw incast_raw; do
        smpicc -O2 -o "$TMP/$prog.smpi" "$ROOT/bench/$prog.c" >"$TMP/smpicc.log" 2>&1 || { cat "$TMP/smpicc.log"; exit 1; }
    done
    jq '.simulate = {slowdown: [1, 1, 1, 1], bandwidth_gbps: ($r / 1000), latency_us: $l} | .workers = 4 | .algorithm.name = "ssgd"' \
        --argjson r "$RATE_MBIT" --argjson l "$LATENCY_US" "$TMP/cal.json" >"$TMP/raw.json"
    "$SIM" --spec "$TMP/raw.json" --summary "$TMP/raw.out" --keep "$TMP/rawplat" --dry-run >/dev/null 2>&1 ||
        { echo "sim_validate: pacer-sim --dry-run failed"; exit 1; }
    raw_real() { # NP PROG ARGS...
        n=$1 prog=$2
        shift 2
        ip netns exec "$(host_ns pc)" mpirun --allow-run-as-root -np "$n" --hostfile "$TMP/hostfile" "$B/bench/$prog" "$@" 2>&1 9>&- | tail -1
    }
    raw_sim() { # NP PROG ARGS...
        n=$1 prog=$2
        shift 2
        # shellcheck disable=SC2086 # smpirun_cfg: words without blanks
        smpirun -platform "$TMP/rawplat/platform.xml" -hostfile "$TMP/rawplat/hostfile" -np "$n" --cfg=smpi/coll-selector:ompi \
            --cfg=smpi/simulate-computation:no $smpirun_cfg --log=root.thres:critical "$TMP/$prog.smpi" "$@" 2>&1 | tail -1
    }
    ms() { awk '{ for (i = 1; i <= NF && $i != "mean"; i++) printf "%s%.1f", (i > 1 ? " / " : ""), $i * 1000 }'; }
    md ""
    md "Raw transfers of the 247 KB gradient (milliseconds, median of $RAW_ITERS; incast: when the 1st / 2nd / 3rd of three simultaneous sends to one host completed):"
    md ""
    md "| transfer | ranks | real | simulated |"
    md "|---|---|---|---|"
    md "| MPI_Allreduce | 2 | $(raw_real 2 allreduce_raw 61708 "$RAW_ITERS" | ms) | $(raw_sim 2 allreduce_raw 61708 "$RAW_ITERS" | ms) |"
    md "| MPI_Allreduce | 4 | $(raw_real 4 allreduce_raw 61708 "$RAW_ITERS" | ms) | $(raw_sim 4 allreduce_raw 61708 "$RAW_ITERS" | ms) |"
    md "| incast, together | 4 | $(raw_real 4 incast_raw 61708 "$RAW_ITERS" | ms) | $(raw_sim 4 incast_raw 61708 "$RAW_ITERS" | ms) |"
    md "| incast, 10 ms apart | 4 | $(raw_real 4 incast_raw 61708 "$RAW_ITERS" 10 | ms) | $(raw_sim 4 incast_raw 61708 "$RAW_ITERS" 10 | ms) |"
fi
md ""
md "Load average (1, 5, 15 min) before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores."
