# bench/lib.sh - helpers for the benchmark scripts (sourced). Results are printed and
# also appended as Markdown to $OUT (build/bench/results.md) for docs/RESULTS.md and
# docs/PERFORMANCE.md.
set -u
BUILD=${BUILD:-build}
WORKER=$BUILD/pacer-worker
OUT=${OUT:-$BUILD/bench/results.md}
PACER_SHARED=${PACER_SHARED:-$(cd .. && pwd)/shared}
MPIRUN="mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none"
export OPENBLAS_NUM_THREADS=1
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
md() { printf '%s\n' "$*" | tee -a "$OUT"; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# torch_isa SUMMARY - the ONEDNN_MAX_CPU_ISA that gives PyTorch the vector width of the
# kernels a pacer run's summary reports (ALL where pacer's products ran in bf16: its
# AVX512-BF16 or AMX kernels, whatever OpenBLAS was told; AVX2 for direct-avx2 or
# OpenBLAS's Haswell/Zen kernels; ALL otherwise). Capped at AVX2, torch 1.13 has no bf16
# convolution and autocast fails ("could not create a primitive descriptor iterator"). PyTorch's convolutions are oneDNN's, which takes the widest ISA
# the CPU has whatever OpenBLAS is told: on an AVX-512 CPU, a pacer run forced onto AVX2
# kernels (OPENBLAS_CORETYPE=Haswell) was otherwise set against PyTorch on AVX-512
# (ResNet-20: 277 samples/s with oneDNN's own choice, 177-190 capped at AVX2).
torch_isa() {
    case $(jq -r '.per_rank[0].device | "\(.conv // "") \(.gemm // "") \(.blas)"' "$1") in
        *bf16* | *avx512* | *SkylakeX* | *Cooperlake* | *SapphireRapids*) echo ALL ;;
        *avx2* | *Haswell* | *Zen*) echo AVX2 ;;
        *) echo ALL ;;
    esac
}
# meansd [DIGITS] - "mean ± sd" (sample standard deviation) of the numbers on stdin, one a
# line; "mean" alone for one number, "-" for none.
meansd() {
    awk -v d="${1:-3}" '{ s += $1; q += $1 * $1; n++ }
        END { if (!n) { print "-"; exit }
              m = s / n; v = n > 1 ? (q - n * m * m) / (n - 1) : 0
              if (n == 1) printf "%.*f\n", d, m; else printf "%.*f ± %.*f\n", d, m, d, sqrt(v > 0 ? v : 0) }'
}
# fit_slowdowns SLOWDOWNS - the slowdowns (a JSON array) scaled to this machine's cores,
# the relative speeds kept, by the rule deploy/demo.sh uses (deploy/fit-slowdowns.jq):
# "[1, 1, 2, 4]" gives [4, 4, 8, 16] on 2 cores, [1, 1, 2, 4] from 6.
fit_slowdowns() {
    jq -n --argjson s "$1" '{emulate: {slowdown: $s}}' | jq --argjson cores "$(nproc)" -f deploy/fit-slowdowns.jq |
        jq -r '.emulate.slowdown | "[" + (map(tostring) | join(", ")) + "]"'
}
# faithful SUMMARY - "yes" or "NO (x of y cores)" from a summary's emulation object.
faithful() {
    jq -r 'if .emulation.faithful then "yes" else "NO (\(.emulation.demand_cores * 100 | round / 100) of \(.emulation.cores) cores)" end' "$1"
}
# The seed runs of an accuracy bench (vit_accuracy.sh, lm_accuracy.sh) kept as
# $KEEP/CFG.SEED.json (the summary) and $KEEP/CFG.SEED.load (/proc/loadavg after the run),
# for the seeds in $SEEDS.
# seed_field CFG FIELD - the field of each seed's summary of configuration CFG, one a line.
seed_field() { for s in $SEEDS; do [ -f "$KEEP/$1.$s.json" ] && jq -r ".$2" "$KEEP/$1.$s.json"; done; }
# seed_loads CFG - the load averages after CFG's runs, comma-separated.
seed_loads() { for s in $SEEDS; do [ -f "$KEEP/$1.$s.load" ] && cut -d' ' -f1 "$KEEP/$1.$s.load"; done | xargs | tr ' ' ,; }
# seed_plans - per seed of the "unequal" configuration, its final batches and each rank's
# emulated wait (s): where the machine's load already makes every step longer than
# slowdown x its cost, nothing is waited and the plan stays even (the profile is then not
# what ran)
seed_plans() {
    for s in $SEEDS; do
        [ -f "$KEEP/unequal.$s.json" ] && jq -r --arg s "$s" '"seed \($s): final batches " +
            ([.per_rank[] | .batch_final | tostring] | join(", ")) + ", emulated wait s " +
            ([.per_rank[] | .emulated_s | round | tostring] | join(", "))' "$KEEP/unequal.$s.json"
    done | paste -sd';' | sed 's/;/; /g'
}
# netns_bench_up NAME PREFIX NET - the namespace cluster of a root-only benchmark
# (deploy/netns; $NETNS set by the caller): one run at a time (/tmp/pacer-NAME.lock), 4
# worker namespaces named PREFIX* on NET.0/24, torn down again on exit.
netns_bench_up() {
    exec 9>"/tmp/pacer-$1.lock"
    flock -w 600 9 || { echo "$1: another run holds /tmp/pacer-$1.lock"; exit 1; }
    export PACER_NETNS_PREFIX="$2" PACER_NETNS_WORKERS=4 PACER_NETNS_NET="$3"
    . "$NETNS/common.sh"
    trap 'sh "$NETNS/down.sh"; rm -rf "$TMP"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    sh "$NETNS/down.sh"
    sh "$NETNS/up.sh" >"$TMP/up.log" 2>&1 || { cat "$TMP/up.log"; exit 1; }
}
# netns_four_up NAME PREFIX NET - netns_bench_up's cluster ($NETNS and $B set by the
# caller) with one rank on each of the 4 worker hosts pw1-pw4 ($TMP/hostfile, for
# compress_mpirun), MPI over its TCP links only; Open MPI sends messages up to 1 MiB
# eagerly, as the coordinator's launch does.
netns_four_up() {
    netns_bench_up "$@"
    netns_mpi_env "sh $NETNS/rsh.sh"
    export OMPI_MCA_btl_tcp_eager_limit=1048576 OMPI_MCA_btl_tcp_max_send_size=1048576
    for h in pw1 pw2 pw3 pw4; do echo "$h slots=1"; done >"$TMP/hostfile"
}
# compress_cluster_up - the cluster of the gradient compression benchmarks (compress_netns.sh,
# compress_tta.sh): under one lock and one prefix (pcb-, 10.82.0.0/24), so the two never
# run at once.
compress_cluster_up() {
    netns_four_up compressnetns pcb- 10.82.0
}
# compress_shape MBIT - every worker host's link limited to MBIT Mbit/s both ways
# (deploy/netns/shape.sh: tbf, or netem rate with no delay where the kernel has netem).
compress_shape() {
    for h in pw1 pw2 pw3 pw4; do sh "$NETNS/shape.sh" "$h" on 0ms "${1}mbit" >&2 || exit 1; done
}
# compress_mpirun SPEC LOG [WORKER ARGS...] - the 4 ranks of SPEC, launched from pc; a
# failure prints LOG's tail and returns non-zero.
compress_mpirun() {
    spec=$1 log=$2
    shift 2
    ip netns exec "$(host_ns pc)" mpirun --allow-run-as-root -np 4 --hostfile "$TMP/hostfile" \
        "$B/pacer-worker" --spec "$spec" "$@" >"$log" 2>&1 9>&- || { tail -20 "$log" >&2; return 1; }
}
# gpt_text_bench RUNS-DEFAULT - the set-up of the built-in GPT's timings on text
# (bf16_speed.sh, bf16_acts.sh): RUNS (the default given), STEPS (80) and STEPS2 (8), one
# thread, and $TMP/text: the GNU licenses of Debian's base-files to train on, 4 KB of the
# LGPL to validate on.
gpt_text_bench() {
    RUNS=${RUNS:-$1}
    STEPS=${STEPS:-80}
    STEPS2=${STEPS2:-8}
    export OMP_NUM_THREADS=1
    lic=/usr/share/common-licenses
    mkdir -p "$TMP/text"
    cat "$lic/GPL-3" "$lic/GPL-2" "$lic/Apache-2.0" >"$TMP/text/train.txt"
    head -c 4096 "$lic/LGPL-2.1" >"$TMP/text/val.txt"
}
# gpt_text_spec JOB NAME PRECISION L H E T B SUBSET - $TMP/NAME.json: job JOB training the
# built-in GPT (L blocks, H heads, E wide, block T) on gpt_text_bench's text at PRECISION,
# batch B, SUBSET sequences, one thread, AdamW.
gpt_text_spec() {
    jq -n --arg name "$1" --arg data "$TMP/text" --arg p "$3" --argjson L "$4" --argjson H "$5" --argjson E "$6" \
        --argjson T "$7" --argjson B "$8" --argjson n "$9" \
        '{name: $name, model: {gpt: {layers: $L, heads: $H, embd: $E, block_size: $T}}, precision: $p,
          dataset: {format: "text", path: $data, train_subset: $n, test_subset: $B},
          batch_size: $B, epochs: 1, threads: 1, device: "cpu", log_every: 0,
          optimizer: {kind: "adamw", lr: 0.001, weight_decay: 0.1}}' >"$TMP/$2.json"
}
