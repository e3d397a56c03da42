# Peak resident memory per rank, measured from outside the processes, of plain ssgd
# against algorithm.shard stage 1 and stage 2 (ZeRO, worker/shard.h) on NP ranks
# (default 4), AdamW, the same spec otherwise; and the median step time of each.
#
# Every 0.1 s the script reads VmHWM (the kernel's high-water mark of the resident set)
# of each pacer-worker process mpirun started, from /proc/PID/status, and keeps the last
# value per process (VmHWM only grows, so the last reading is the peak up to ~0.1 s
# before the exit). The summary's own peak_rss_mb (getrusage, inside the process) is
# printed beside it.
#
# MODEL: the spec's "model" and "dataset" members (JSON). The default is the built-in
# GPT of about 100 M parameters (14 blocks of width 768, 256 byte tokens, 64 positions) on
# a text file of random words made here: it needs the built-in GPT ("model": {"gpt":
# ...}). A CNN works too, e.g.
#   MODEL='"model": "resnet20", "dataset": {"name": "cifar10", "train_subset": 2048}'
# (its 270 k parameters make the state a few MB: the saving is then lost in the rest).
#
# Each of plain, stage 1 and stage 2 runs REPEAT times (default 3), interleaved (plain,
# stage 1, stage 2, plain, ...) so that a change in the machine's load falls on all
# three alike; a row per run, then the medians over the runs and their ratios to plain.
#
# BIG=1: instead, a GPT whose plain replicas do not fit this machine four times over
# (24 blocks of width 1152, about 383 M parameters: 16 bytes a parameter x 4 ranks is
# 24 GB): plain ssgd is refused by the worker's memory check (its estimate against
# MemAvailable), stage 2 trains STEPS steps and its peaks are printed.
#
# NETNS=1: the same comparison on real links instead of one host's shared memory: 4 ranks,
# one on each worker host of the namespace cluster (deploy/netns, its own names psz- and
# network 10.89.0), every host's link limited both ways to each of RATES in turn
# (Mbit/s, default "1000 10000": deploy/netns/shape.sh, tbf or netem), MPI over TCP only;
# a table of runs and medians per rate. Needs root; the namespaces are removed on any exit
# (netns_bench_up's trap), an interrupt included. A rank waiting in MPI yields its core
# (OMPI_MCA_mpi_yield_when_idle=1, as bench/tcp_eager.sh and sim_validate.sh run; set it
# to 0 to see the other case): the 4 "hosts" share this machine's cores, and Open MPI,
# which sees one rank a host, would otherwise poll at full speed while it waits, taking
# the core from a rank of another "host" still computing, which separate hosts never do.
# (Measured at 1 Gbit/s, 3 runs, while the reduce-scatter still blocked the backward pass
# at every bucket: polling gave stage 1 1.06x and stage 2 1.14x plain's step, about what
# yielding gave; docs/PERFORMANCE.md.)
#
# Each run's row ends with rank 0's step by phase (seconds a step, the summary's
# per_rank[0].phases over every step, the first included): a sharded rank's
# communication is the reduce-scatter's rounds inside the backward pass, their end and
# the all-gather; plain's is its all-reduce, its wait for slower peers apart.
#
# usage: sh bench/shard_memory.sh   (NP=4 STEPS=6 BATCH=4 REPEAT=3 BIG=1 MODEL=... override)
#        sudo NETNS=1 REPEAT=5 STEPS=10 BATCH=1 GPT='"layers": 4, "heads": 4, "embd": 384' sh bench/shard_memory.sh
. bench/lib.sh
NP=${NP:-4}
STEPS=${STEPS:-6}
BATCH=${BATCH:-4}
REPEAT=${REPEAT:-3}
BIG=${BIG:-0}
NETNS=${NETNS:-0}
RATES=${RATES:-1000 10000}
if [ "$NETNS" = 1 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "shard_memory: NETNS=1 needs root (network namespaces)"; exit 1; }
    [ "$NP" = 4 ] || { echo "shard_memory: NETNS=1 runs 4 ranks, one a host (NP=$NP)"; exit 1; }
    case $BUILD in /*) B=$BUILD ;; *) B=$(pwd)/$BUILD ;; esac
    ON_NETNS=1 NETNS=$(pwd)/deploy/netns # from here, the path bench/lib.sh's helpers use
    export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"
else
    ON_NETNS=0
fi
[ "$BIG" = 1 ] && [ -z "${MODEL:-}" ] && GPT='"layers": 24, "heads": 12, "embd": 1152'
GPT=${GPT:-'"layers": 14, "heads": 12, "embd": 768'}
if [ -z "${MODEL:-}" ]; then
    # a text set of random words (the GPT reads bytes): train.txt and val.txt
    mkdir -p "$TMP/text"
    awk 'BEGIN { srand(7); for (i = 0; i < 60000; i++) { w = ""; n = 2 + int(rand() * 6);
         for (k = 0; k < n; k++) w = w sprintf("%c", 97 + int(rand() * 26)); printf "%s%s", w, (i % 12 == 11) ? "\n" : " " } }' \
        >"$TMP/text/train.txt"
    head -c 20000 "$TMP/text/train.txt" >"$TMP/text/val.txt"
    MODEL="\"model\": {\"gpt\": {$GPT, \"block_size\": 64}},
 \"dataset\": {\"format\": \"text\", \"path\": \"$TMP/text\", \"test_subset\": 16}, \"device\": \"cpu\""
fi
spec() { # FILE [SHARD-JSON]
    cat >"$1" <<JSON
{"name": "mem", $MODEL,
 "algorithm": {"name": "ssgd"${2:+, \"shard\": $2}}, "workers": $NP, "batch_size": $BATCH, "epochs": 1, "seed": 1,
 "log_every": 0, "optimizer": {"kind": "adamw", "lr": 0.0003, "weight_decay": 0.1}}
JSON
}

# run NAME [SHARD-JSON]: prints "NAME|peak_mb_rank0 ...|rss_mb ...|summary peak_rss_mb ...|median step s|comm"
run() {
    spec "$TMP/$1.json" "${2:-}"
    rm -f "$TMP/$1.jsonl" "$TMP/$1.out" # the worker appends its metrics: a run's own steps only
    if [ "$ON_NETNS" = 1 ]; then
        compress_mpirun "$TMP/$1.json" "$TMP/$1.log" --stop-after-steps "$STEPS" --summary "$TMP/$1.out" \
            --metrics "$TMP/$1.jsonl" &
    else
        $MPIRUN -np "$NP" $WORKER --spec "$TMP/$1.json" --stop-after-steps "$STEPS" --summary "$TMP/$1.out" \
            --metrics "$TMP/$1.jsonl" >"$TMP/$1.log" 2>&1 &
    fi
    launcher=$!
    : >"$TMP/$1.hwm"
    while kill -0 "$launcher" 2>/dev/null; do
        # the workers only: mpirun's own arguments name the spec too, after "mpirun"
        for pid in $(pgrep -f "^[^ ]*pacer-worker --spec $TMP/$1.json" 2>/dev/null); do
            kb=$(awk '/^VmHWM:/ { h = $2 } /^VmRSS:/ { r = $2 } END { if (h) print h, r }' "/proc/$pid/status" 2>/dev/null)
            [ -n "$kb" ] && echo "$pid $kb" >>"$TMP/$1.hwm"
        done
        sleep 0.1
    done
    wait "$launcher" || { tail -20 "$TMP/$1.log"; echo "$1: the run failed"; exit 1; }
    # per process: the last VmHWM (the peak), and the largest VmRSS of the second half of
    # its readings (the training steps, after set-up), largest first
    peaks=$(awk '{ n[$1]++; h[$1] = $2; r[$1, n[$1]] = $3 }
        END { for (k in n) { m = 0; for (i = int(n[k] / 2) + 1; i <= n[k]; i++) if (r[k, i] > m) m = r[k, i];
              printf "%d %d\n", h[k], m } }' "$TMP/$1.hwm" | sort -rn)
    hwm=$(echo "$peaks" | awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 / 1024 }')
    rss=$(echo "$peaks" | awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $2 / 1024 }')
    inside=$(jq -r '[.per_rank[].peak_rss_mb | floor] | map(tostring) | join(" ")' "$TMP/$1.out")
    step=$(jq -r 'select(.kind == "step" and .rank == 0) | .step_s // .wall_s // empty' "$TMP/$1.jsonl" | tail -n +2 | median)
    # rank 0's time in communication per step (the reduce-scatter inside the backward pass
    # included), and the bytes a rank sent per step
    comm=$(jq -r '"\(.per_rank[0].phases.comm / .steps * 1000 | round / 1000) s, \(.comm_bytes_per_step / 1e6 | round) MB"' "$TMP/$1.out")
    # rank 0's step by phase (seconds a step, the phases of common/phases.h that took any)
    comm="$comm; $(jq -r '.steps as $n | [.per_rank[0].phases | del(.steps, .step_s) | to_entries[] | select(.value > 0.0005 * $n)
        | "\(.key) \(.value / $n * 1000 | round / 1000)"] | join(", ")' "$TMP/$1.out")"
    echo "$1|$hwm|$rss|$inside|$step|$comm"
}

CPU="$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
if [ "$BIG" = 1 ]; then
    spec "$TMP/plain.json" ""
    if $MPIRUN -np "$NP" $WORKER --spec "$TMP/plain.json" --stop-after-steps 1 >"$TMP/plainbig.log" 2>&1; then
        echo "plain ssgd of the big GPT was not refused: this machine has room for it"
        exit 1
    fi
    refusal=$(grep -m1 "estimated memory" "$TMP/plainbig.log")
    [ -n "$refusal" ] || { tail -20 "$TMP/plainbig.log"; echo "plain failed otherwise"; exit 1; }
    line=$(run stage2 '{"stage": 2}') || { echo "$line"; exit 1; }
    md ""
    md "### A GPT that plain ssgd cannot train on $NP ranks here, at stage 2 (\`BIG=1 sh bench/shard_memory.sh\`, $CPU)"
    md ""
    md "Parameters: $(jq '.shard.params_per_rank | add' "$TMP/stage2.out"); MemTotal $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)."
    md "Plain ssgd: refused: \`$refusal\`."
    md "Stage 2, $STEPS steps: VmHWM per rank $(echo "$line" | cut -d'|' -f2) MiB (sum $(echo "$line" | cut -d'|' -f2 | tr ' ' '\n' | awk '{ s += $1 } END { print s }') MiB); median step $(echo "$line" | cut -d'|' -f5) s; rank 0's last step loss $(jq -r 'select(.kind == "step" and .rank == 0) | .loss' "$TMP/stage2.jsonl" | tail -1)."
    exit 0
fi

# compare TITLE: REPEAT interleaved runs of plain, stage 1 and stage 2, a row each, then
# their medians and ratios to plain
compare() {
    md ""
    md "### $1"
    md ""
    md "| run | VmHWM per rank, MiB (from /proc, largest first) | VmRSS while training, MiB | peak_rss_mb per rank (summary) | median step, s | communication a step (rank 0's time, bytes sent); rank 0's step by phase, s |"
    md "|---|---|---|---|---|---|"
    : >"$TMP/all"
    for i in $(seq "$REPEAT"); do
        for cfg in "plain|" "stage 1|{\"stage\": 1}" "stage 2|{\"stage\": 2}"; do
            name=${cfg%%|*}
            line=$(run "$(echo "$name" | tr -d ' ')" "${cfg#*|}") || { echo "$line"; exit 1; }
            md "| $name ($i) | $(echo "$line" | cut -d'|' -f2) | $(echo "$line" | cut -d'|' -f3) | $(echo "$line" | cut -d'|' -f4) | $(echo "$line" | cut -d'|' -f5) | $(echo "$line" | cut -d'|' -f6) |"
            # the largest rank's peak and the step, per run
            echo "$name|$(echo "$line" | cut -d'|' -f2 | awk '{ print $1 }')|$(echo "$line" | cut -d'|' -f5)" >>"$TMP/all"
        done
    done
    med() { grep "^$1|" "$TMP/all" | cut -d'|' -f"$2" | median; }
    pm=$(med plain 2)
    ps=$(med plain 3)
    md ""
    md "Medians over $REPEAT runs (the largest rank's VmHWM; rank 0's median step); load average $(cut -d' ' -f1-3 /proc/loadavg) at the end:"
    md ""
    md "| run | VmHWM, MiB | x plain | step, s | x plain |"
    md "|---|---|---|---|---|"
    for name in plain "stage 1" "stage 2"; do
        m=$(med "$name" 2)
        st=$(med "$name" 3)
        md "| $name | $m | $(ratio "$m" "$pm") | $st | $(ratio "$st" "$ps") |"
    done
    md ""
    md "Parameters: $(jq '.shard.params_per_rank | add' "$TMP/stage2.out"); shard object of stage 2: \`$(jq -c '.shard | {state_bytes_per_rank, gradient_bytes_per_rank}' "$TMP/stage2.out")\`."
}

if [ "$ON_NETNS" = 1 ]; then
    netns_four_up shardnetns psz- 10.89.0
    for rate in $RATES; do
        compress_shape "$rate"
        compare "Step time on links of $rate Mbit/s, plain ssgd against algorithm.shard (\`NETNS=1 sh bench/shard_memory.sh\`, 4 ranks on 4 namespace hosts, mpi_yield_when_idle $OMPI_MCA_mpi_yield_when_idle, $CPU, $REPEAT runs each, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start)"
    done
    exit 0
fi
compare "Peak resident memory and step time per rank, plain ssgd against algorithm.shard (\`sh bench/shard_memory.sh\`, $NP ranks, $CPU, $REPEAT runs each)"
