# bench/tcp_eager.sh - Open MPI's TCP eager limit on shaped links (issue 27): what sending
# larger messages eagerly (btl_tcp_eager_limit, with btl_tcp_max_send_size to match) does
# to pacer's transfers at several link speeds. The launchers' default comes from here
# (docs/PERFORMANCE.md, "Over TCP: Open MPI's eager limit").
#
#   sudo sh bench/tcp_eager.sh         (root: network namespaces; ~30 min with the defaults)
#
# The cluster: deploy/netns's topology (pc and pw1..pw4, one veth each into a bridge), one
# rank per worker host, mpirun in pc; MPI over TCP only (btl tcp,self: the ranks of
# different namespaces share no memory segment), checked by the bytes the veths carried.
# Every worker host's link is limited to each rate of RATES both ways: netem `rate`
# where the kernel has it, else tbf with a burst of 1 ms at the rate (16 kB at least).
# For each rate, REPS rounds; in each round every workload runs once under every
# configuration of EAGERS ("default": Open MPI's own, 64 KiB; a byte count: that eager
# limit and max send size), the configurations' order rotated from round to round, so that
# the machine's load drifts across them alike. Workloads:
#   raw-lenet5, raw-resnet20   bench/allreduce_raw on 4 ranks, the gradient's float count,
#                              RAW_ITERS iterations: its median (ms)
#   ssgd-lenet5                pacer-worker, ssgd, 4 workers, LeNet-5 / Fashion-MNIST, batch
#                              32, LENET_STEPS steps each
#   ssgd-resnet20              the same with ResNet-20 / CIFAR-10 ($PACER_SHARED/datasets/
#                              cifar-10), batch 8 (comm size is the model's), RESNET_STEPS
#   asgd-lenet5                the parameter server (rank 0 on pw1) and 3 workers pushing
#                              LeNet-5 gradients, PS_STEPS pushes each
# The jobs report communication per step: the workers' comm_s summed over their steps
# (the parameter server's pushes: a push and the weights' reply), and the training time.
# Cells: median over REPS (min..max). Ranks outnumber the 2 cores here: compute is slow
# and noisy, and the load is printed; the raw allreduces are the cleanest figure.
. bench/lib.sh
ROOT=$(pwd)
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
NETNS=$ROOT/deploy/netns
RATES=${RATES:-100mbit 1gbit 10gbit}
EAGERS=${EAGERS:-default 262144 1048576 4194304}
WORKLOADS=${WORKLOADS:-raw-lenet5 raw-resnet20 ssgd-lenet5 ssgd-resnet20 asgd-lenet5}
REPS=${REPS:-3}
RAW_ITERS=${RAW_ITERS:-20}
LENET_STEPS=${LENET_STEPS:-40}
RESNET_STEPS=${RESNET_STEPS:-12}
PS_STEPS=${PS_STEPS:-100}
CIFAR_DIR=$PACER_SHARED/datasets/cifar-10
FASHION_DIR=/usr/share/datasets/fashion-mnist
skip() { echo "tcp_eager: skipped: $*"; exit 0; }

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces; run with sudo)"
for c in ip tc unshare flock mpirun jq; do
    command -v "$c" >/dev/null 2>&1 || skip "$c not installed (make deps)"
done
for f in "$B/pacer-worker" "$B/bench/allreduce_raw" "$B/pacer-platform"; do
    [ -x "$f" ] || { echo "tcp_eager: $f not built (make all)"; exit 1; }
done
[ -d "$FASHION_DIR" ] || skip "Fashion-MNIST not installed"
case " $WORKLOADS " in *resnet20*) [ -d "$CIFAR_DIR" ] || skip "CIFAR-10 not found at $CIFAR_DIR" ;; esac
probe=pte-probe$$
ip netns add "$probe" 2>/dev/null || skip "cannot create network namespaces (ip netns add)"
ip netns del "$probe"

# One run at a time; names and a /24 of their own (the tests use 10.77-10.80).
netns_bench_up tcpeager pte- "${EAGER_NET:-10.83.0}"
netns_mpi_env "sh $NETNS/rsh.sh"
# A waiting rank yields its core to a computing one (4 ranks, 2 cores).
export OMPI_MCA_mpi_yield_when_idle=1
unset OMPI_MCA_btl_tcp_eager_limit OMPI_MCA_btl_tcp_max_send_size
printf 'pw1 slots=1\npw2 slots=1\npw3 slots=1\npw4 slots=1\n' >"$TMP/hostfile"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)

# shape RATE - every worker host's link limited to RATE both ways ("none": unshaped).
shape() {
    how=""
    for h in pw1 pw2 pw3 pw4; do
        ns=$(host_ns "$h") veth=$(host_veth "$h")
        tc qdisc del dev "$veth" root 2>/dev/null
        ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null
        [ "$1" = none ] && { how="unshaped"; continue; }
        if tc qdisc add dev "$veth" root netem rate "$1" 2>/dev/null &&
            ip netns exec "$ns" tc qdisc add dev eth0 root netem rate "$1" 2>/dev/null; then
            how="netem rate $1"
        else
            tc qdisc del dev "$veth" root 2>/dev/null
            bits=$(echo "$1" | awk '{ n = $1 + 0; u = tolower($1); sub(/^[0-9.]+/, "", u)
                m = u ~ /^g/ ? 1e9 : u ~ /^m/ ? 1e6 : u ~ /^k/ ? 1e3 : 1; print n * m }')
            burst=$(awk -v b="$bits" 'BEGIN { x = b / 8 / 1000; if (x < 16384) x = 16384; printf "%d", x }')
            tc qdisc add dev "$veth" root tbf rate "$1" burst "$burst" latency 400ms &&
                ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$1" burst "$burst" latency 400ms ||
                { echo "tcp_eager: cannot shape $h at $1"; exit 1; }
            how="tbf rate $1 burst $burst"
        fi
    done
    echo "$how"
}

# Bytes the worker hosts sent so far: what their veths' bridge ends received (a byte
# between two hosts crosses both their veths: counted once here).
veth_bytes() {
    s=0
    for h in pw1 pw2 pw3 pw4; do s=$((s + $(cat "/sys/class/net/$(host_veth "$h")/statistics/rx_bytes"))); done
    echo "$s"
}

# The gradients' float counts: the cost model's parameter counts.
params() { "$B/pacer-platform" --cost "$1" | jq -r '.params // .parameters // empty'; }
n_lenet=$(params lenet5)
n_resnet=$(params resnet20)
[ -n "$n_lenet" ] && [ -n "$n_resnet" ] || { echo "tcp_eager: pacer-platform --cost gave no parameter count"; exit 1; }

spec() { # NAME ALGO WORKERS MODEL BATCH STEPS
    case $4 in
        lenet5) ds="{\"name\": \"fashion-mnist\", \"path\": \"$FASHION_DIR\", \"train_subset\": $(($3 * $5 * $6)), \"test_subset\": 32}" ;;
        *) ds="{\"name\": \"cifar10\", \"path\": \"$CIFAR_DIR\", \"train_subset\": $(($3 * $5 * $6)), \"test_subset\": 32}" ;;
    esac
    jq -n --arg a "$2" --argjson w "$3" --arg m "$4" --argjson b "$5" --argjson d "$ds" '{name: "eager", model: $m,
        dataset: $d, workers: $w, batch_size: $b, epochs: 1, seed: 1, log_every: 0,
        optimizer: {lr: 0.01, momentum: 0.5}, algorithm: {name: $a}}' >"$TMP/$1.json"
}
spec ssgd-lenet5 ssgd 4 lenet5 32 "$LENET_STEPS"
spec ssgd-resnet20 ssgd 4 resnet20 8 "$RESNET_STEPS"
spec asgd-lenet5 asgd 3 lenet5 32 "$PS_STEPS"

# mpi NP CONFIG LOG CMD... - CMD on NP ranks across pw1..pw4 under CONFIG's eager limit.
mpi() {
    n=$1 cfg=$2 log=$3
    shift 3
    set -- mpirun --allow-run-as-root -np "$n" --hostfile "$TMP/hostfile" "$@"
    [ "$cfg" != default ] && set -- env OMPI_MCA_btl_tcp_eager_limit="$cfg" OMPI_MCA_btl_tcp_max_send_size="$cfg" "$@"
    ip netns exec "$(host_ns pc)" "$@" >"$log" 2>&1 9>&-
}

# run WORKLOAD CONFIG RATE REP - one run; appends "value comm_ms" to its cell's file:
# value is the raw median (ms) or the job's train_s, comm_ms the comm per step.
run() {
    w=$1 cfg=$2 cell="$TMP/cell-$3-$1-$2" log="$TMP/log-$3-$1-$2-$4"
    case $w in
        raw-*)
            n=$n_lenet; [ "$w" = raw-resnet20 ] && n=$n_resnet
            mpi 4 "$cfg" "$log" "$B/bench/allreduce_raw" "$n" "$RAW_ITERS" ||
                { tail -20 "$log"; echo "tcp_eager: $w ($cfg, $3) failed"; exit 1; }
            awk 'NF == 1 && $1 + 0 > 0 { v = $1 } END { printf "%.3f -\n", v * 1000 }' "$log" >>"$cell" ;;
        *)
            np=4
            mpi "$np" "$cfg" "$log" "$B/pacer-worker" --spec "$TMP/$w.json" --summary "$log.out" ||
                { tail -20 "$log"; echo "tcp_eager: $w ($cfg, $3) failed"; exit 1; }
            jq -r '[.per_rank[] | select(.role == "worker")] as $w
                | "\(.train_s) \(($w | map(.comm_s) | add) / ($w | map(.steps) | add) * 1000)"' "$log.out" >>"$cell" ;;
    esac
}

# The check that the ranks really talk over the links: a raw ResNet-20-sized allreduce
# moves at least 2 x 3/4 of its bytes out of every rank (ring; recursive doubling sends more).
shape none >/dev/null
b0=$(veth_bytes)
mpi 4 default "$TMP/tcpcheck.log" "$B/bench/allreduce_raw" "$n_resnet" 10 || { cat "$TMP/tcpcheck.log"; exit 1; }
moved=$(($(veth_bytes) - b0))
need=$((n_resnet * 4 * 4 * 10 * 3 / 2))
[ "$moved" -ge "$need" ] || { echo "tcp_eager: 10 allreduces moved $moved bytes over the veths, fewer than $need: not over TCP?"; exit 1; }

for rate in $RATES; do
    how=$(shape "$rate")
    echo "$rate: $how" >>"$TMP/shaping"
    rep=1
    while [ "$rep" -le "$REPS" ]; do
        # Rotate the configurations' order from round to round.
        order=$(echo "$EAGERS" | tr ' ' '\n' | awk -v r="$rep" '{ a[NR - 1] = $0 } END { for (i = 0; i < NR; i++) print a[(i + r - 1) % NR] }')
        for w in $WORKLOADS; do
            for cfg in $order; do run "$w" "$cfg" "$rate" "$rep"; done
        done
        echo "tcp_eager: $rate round $rep of $REPS done ($(($(date +%s) - start)) s)" >&2
        rep=$((rep + 1))
    done
done
# The unshaped veths at Open MPI's default: what the veth and the CPU give without tc.
how=$(shape none)
rep=1
while [ "$rep" -le "$REPS" ]; do
    for w in raw-lenet5 raw-resnet20; do case " $WORKLOADS " in *" $w "*) run "$w" default none "$rep" ;; esac; done
    rep=$((rep + 1))
done

# cell FILE COLUMN - "median (min..max)" of a cell's column; "–" when empty.
cell() {
    [ -s "$1" ] || { echo "–"; return; }
    med=$(awk -v c="$2" '{ print $c }' "$1" | median)
    awk -v c="$2" -v m="$med" '{ v = $c + 0; if (NR == 1 || v < lo) lo = v; if (NR == 1 || v > hi) hi = v }
        END { if (m >= 100) f = "%.0f (%.0f..%.0f)"; else if (m >= 10) f = "%.1f (%.1f..%.1f)"; else f = "%.2f (%.2f..%.2f)"; printf f, m, lo, hi }' "$1"
}
name() { case $1 in default) echo "default (64 KiB)" ;; *) awk -v b="$1" 'BEGIN { if (b % 1048576 == 0) printf "%d MiB", b / 1048576; else printf "%d KiB", b / 1024 }' ;; esac; }
header() {
    line="| rate |" sep="|---|"
    for cfg in $EAGERS; do line="$line $(name "$cfg") |" sep="$sep---|"; done
    md "$line"
    md "$sep"
}
table() { # WORKLOAD COLUMN TITLE
    case " $WORKLOADS " in *" $1 "*) ;; *) return ;; esac
    md ""
    md "$3"
    md ""
    header
    for rate in $RATES; do
        line="| $rate |"
        for cfg in $EAGERS; do line="$line $(cell "$TMP/cell-$rate-$1-$cfg" "$2") |"; done
        md "$line"
    done
    case $1 in raw-*) [ -s "$TMP/cell-none-$1-default" ] && md "| unshaped | $(cell "$TMP/cell-none-$1-default" 1) |" ;; esac
}
md ""
md "### Open MPI's TCP eager limit (\`sudo sh bench/tcp_eager.sh\`)"
md ""
md "4 ranks, one per namespace host, btl tcp,self ($(awk -v m="$moved" 'BEGIN { printf "%.1f", m / 1e6 }') MB left the worker hosts through their veths in the TCP check's 10 allreduces of ResNet-20's gradient,"
md "$(awk -v m="$need" 'BEGIN { printf "%.1f", m / 1e6 }') MB at least expected); links: $(paste -sd';' "$TMP/shaping" | sed 's/;/; /g'). LeNet-5: $n_lenet floats ($((n_lenet * 4 / 1000)) kB),"
md "ResNet-20: $n_resnet floats ($((n_resnet * 4 / 1000)) kB). Columns: btl_tcp_eager_limit = btl_tcp_max_send_size."
md "Median (min..max) of $REPS alternating runs per cell."
table raw-lenet5 1 "Raw 4-rank MPI_Allreduce of LeNet-5's gradient (ms, each run the median of $RAW_ITERS):"
table raw-resnet20 1 "Raw 4-rank MPI_Allreduce of ResNet-20's gradient (ms, each run the median of $RAW_ITERS):"
table ssgd-lenet5 2 "ssgd, LeNet-5, 4 workers, batch 32, $LENET_STEPS steps: communication per step (ms, the workers' comm_s over their steps):"
table ssgd-lenet5 1 "The same jobs' training time (train_s, s):"
table ssgd-resnet20 2 "ssgd, ResNet-20 / CIFAR-10, 4 workers, batch 8, $RESNET_STEPS steps: communication per step (ms):"
table ssgd-resnet20 1 "The same jobs' training time (train_s, s):"
table asgd-lenet5 2 "asgd (parameter server + 3 workers), LeNet-5, $PS_STEPS pushes per worker: communication per push (ms: a push and the weights' reply, queueing at the server included):"
table asgd-lenet5 1 "The same jobs' training time (train_s, s):"
md ""
md "Load average (1, 5, 15 min) before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $(($(date +%s) - start)) s."
