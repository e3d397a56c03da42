# LeNet-5 on Fashion-MNIST, batch 64, one thread: pacer against PyTorch (Debian's
# python3-torch) in the same run, alternating, 3 runs each; medians of training samples/s
# (time inside the training loop) and of peak RSS. Also the FLOPs pacer does per cycle,
# against one core's peak, with cycles from perf stat where the machine lets it count and
# from CPU time x a measured clock where it does not.
. bench/lib.sh
RUNS=${RUNS:-3}
cat > "$TMP/spec.json" <<JSON
{"name": "bench", "model": "lenet5", "dataset": {"name": "fashion-mnist"}, "epochs": 1, "batch_size": 64,
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "threads": 1, "log_every": 0}
JSON
# pair TAG [env VAR ...] - RUNS alternating runs of each, the command prefix applied to both;
# PyTorch's oneDNN capped at the vector width of pacer's kernels (lib.sh's torch_isa).
pair() {
    tag=$1
    shift
    for i in $(seq "$RUNS"); do
        "$@" $WORKER --spec "$TMP/spec.json" --summary "$TMP/p$tag$i.json" >/dev/null 2>&1 || exit 1
        "$@" ONEDNN_MAX_CPU_ISA="$(torch_isa "$TMP/p$tag$i.json")" /usr/bin/python3 bench/torch_lenet.py 1 > "$TMP/t$tag$i.json" || exit 1
    done
}
# Medians of a field over a pair's runs: med TAG p|t FIELD.
med() { for i in $(seq "$RUNS"); do jq "$3" "$TMP/$2$1$i.json"; done | median; }
# OpenBLAS's kernels move pacer's figure (kernels/cpu/blas_core.h), and PyTorch's linear
# layers through the same library: both run with the environment as it is, and, where
# the environment forces a core (OPENBLAS_CORETYPE), again with OpenBLAS's own choice.
# PyTorch's convolutions (oneDNN) get the same vector width as pacer's in each pair.
pair a env
p_sps=$(med a p .train_samples_per_s)
t_sps=$(med a t .samples_per_s)
p_rss=$(med a p .peak_rss_mb)
t_rss=$(med a t .peak_rss_mb)
blas=$(jq -r '.per_rank[0].device | "\(.blas) (convolutions: \(.conv // "im2col-gemm"))"' "$TMP/pa1.json")
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
    pair b env -u OPENBLAS_CORETYPE
    blas_own=$(jq -r '.per_rank[0].device | "\(.blas) (convolutions: \(.conv // "im2col-gemm"))"' "$TMP/pb1.json")
fi
# FLOPs pacer does per training sample (2 per multiply-add, GEMM work only; pooling, ReLU
# and the loss are a few percent more and not counted). LeNet-5 multiply-adds forward:
# conv1 28*28*6*25, conv2 10*10*16*150, fc 400*120 + 120*84 + 84*10. Backward: the weight
# gradients of every layer (as many as forward) and the input gradients of every layer but
# conv1, whose input is the image: pacer does not compute that one (worker/model.c passes
# no dinp to the first layer). Evaluation is forward only.
fwd=$(awk 'BEGIN { print 28*28*6*25 + 10*10*16*150 + 400*120 + 120*84 + 84*10 }')
flops=$(awk -v f="$fwd" 'BEGIN { print 2 * (f + f + (f - 28*28*6*25)) }')
# The clock: cycles counted by perf (user space, the whole pacer process: data loading
# and evaluation included, so the share of peak is a slight underestimate), not a nominal
# frequency. Where perf cannot count them (a virtual machine without a PMU), cycles are
# the process's CPU time (user + sys) times the clock one core was measured to run at
# just before (build/bench/cpu_clock: a chain of dependent adds, one cycle each; see its
# limits there). Peak of one core: 2 FMA pipes x 8 float lanes (AVX2) x 2 FLOP = 32
# FLOP/cycle.
cycles="" why="perf is not installed (Debian: linux-perf)"
if command -v perf >/dev/null 2>&1; then
    perf stat -x, -e cycles:u -o "$TMP/perf.csv" $WORKER --spec "$TMP/spec.json" --summary "$TMP/perf.json" >/dev/null 2>&1
    cycles=$(awk -F, '$3 ~ /^cycles/ && $1 ~ /^[0-9]+$/ { print $1 }' "$TMP/perf.csv")
    how='cycles from `perf stat -e cycles:u`'
    why="perf cannot count cycles here: $(grep -m1 -o 'not supported\|not counted\|Permission denied\|No permission' "$TMP/perf.csv" || echo 'no cycles line')"
fi
if [ -z "$cycles" ] && hz=$($BUILD/bench/cpu_clock) && [ -n "$hz" ]; then
    /usr/bin/time -f "%U %S" -o "$TMP/cpu.txt" $WORKER --spec "$TMP/spec.json" --summary "$TMP/perf.json" >/dev/null 2>&1
    cpu_s=$(awk '{ print $1 + $2 }' "$TMP/cpu.txt")
    cycles=$(awk -v c="$cpu_s" -v h="$hz" 'BEGIN { printf "%.0f", c * h }')
    how="cycles = the process's CPU time, $cpu_s s, x one core's measured clock, $(awk -v h="$hz" 'BEGIN { printf "%.2f", h / 1e9 }') GHz (build/bench/cpu_clock; $why)"
fi
if [ -n "$cycles" ]; then
    total=$(awk -v f="$flops" -v fw="$fwd" -v n="$(jq ".per_rank[0].samples" "$TMP/perf.json")" \
        'BEGIN { print f * n + 2 * fw * 10000 }')
    peak_line="pacer does $(awk -v c="$cycles" -v t="$total" 'BEGIN { printf "%.1f", t / c }') FLOP per cycle over its whole run on $blas kernels ($(awk -v c="$cycles" -v t="$total" 'BEGIN { printf "%.0f", 100 * t / c / 32 }')% of one core's 32 FLOP/cycle AVX2 FMA peak; $flops FLOP per training sample, $how, data loading included)."
else
    peak_line="Share of peak not measured: $why, and build/bench/cpu_clock did not run; pacer does $flops FLOP per training sample."
fi
md ""
md "### LeNet-5 training speed, one thread, batch 64 (\`sh bench/lenet_vs_pytorch.sh\`)"
md ""
md "| | OpenBLAS kernels | samples/s (median of $RUNS) | peak RSS MB |"
md "|---|---|---|---|"
md "| pacer | $blas${OPENBLAS_CORETYPE:+ (OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE in the environment)} | $(printf %.0f "$p_sps") | $(printf %.0f "$p_rss") |"
md "| PyTorch $(jq -r .torch "$TMP/ta1.json") | the same; oneDNN convolutions with ONEDNN_MAX_CPU_ISA=$(jq -r .onednn_isa "$TMP/ta1.json") | $(printf %.0f "$t_sps") | $(printf %.0f "$t_rss") |"
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
    md "| pacer | $blas_own (OpenBLAS's own choice) | $(printf %.0f "$(med b p .train_samples_per_s)") | $(printf %.0f "$(med b p .peak_rss_mb)") |"
    md "| PyTorch $(jq -r .torch "$TMP/tb1.json") | the same; oneDNN convolutions with ONEDNN_MAX_CPU_ISA=$(jq -r .onednn_isa "$TMP/tb1.json") | $(printf %.0f "$(med b t .samples_per_s)") | $(printf %.0f "$(med b t .peak_rss_mb)") |"
fi
md ""
md "pacer / PyTorch speed: **$(ratio "$p_sps" "$t_sps")x** with $blas kernels${OPENBLAS_CORETYPE:+, **$(ratio "$(med b p .train_samples_per_s)" "$(med b t .samples_per_s)")x** with $blas_own} (target >= 1.5x); memory: pacer $(ratio "$p_rss" "$t_rss")x PyTorch's."
md "$peak_line"
