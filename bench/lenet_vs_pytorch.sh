# LeNet-5 on Fashion-MNIST, batch 64, one thread: pacer against PyTorch (Debian's
# python3-torch) in the same run, alternating, 3 runs each; medians of training samples/s
# (time inside the training loop) and of peak RSS. Also the FLOPs pacer does per cycle,
# against one core's peak, with cycles from perf stat where the machine lets it count.
. bench/lib.sh
RUNS=${RUNS:-3}
cat > "$TMP/spec.json" <<JSON
{"name": "bench", "model": "lenet5", "dataset": {"name": "fashion-mnist"}, "epochs": 1, "batch_size": 64,
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "threads": 1, "log_every": 0}
JSON
for i in $(seq "$RUNS"); do
    $WORKER --spec "$TMP/spec.json" --summary "$TMP/p$i.json" >/dev/null 2>&1 || exit 1
    /usr/bin/python3 bench/torch_lenet.py 1 > "$TMP/t$i.json" || exit 1
done
p_sps=$(for i in $(seq "$RUNS"); do jq .train_samples_per_s "$TMP/p$i.json"; done | median)
t_sps=$(for i in $(seq "$RUNS"); do jq .samples_per_s "$TMP/t$i.json"; done | median)
p_rss=$(for i in $(seq "$RUNS"); do jq .peak_rss_mb "$TMP/p$i.json"; done | median)
t_rss=$(for i in $(seq "$RUNS"); do jq .peak_rss_mb "$TMP/t$i.json"; done | median)
# FLOPs pacer does per training sample (2 per multiply-add, GEMM work only; pooling, ReLU
# and the loss are a few percent more and not counted). LeNet-5 multiply-adds forward:
# conv1 28*28*6*25, conv2 10*10*16*150, fc 400*120 + 120*84 + 84*10. Backward: the weight
# gradients of every layer (as many as forward) and the input gradients of every layer but
# conv1, whose input is the image: pacer does not compute that one (worker/model.c passes
# no dinp to the first layer). Evaluation is forward only.
fwd=$(awk 'BEGIN { print 28*28*6*25 + 10*10*16*150 + 400*120 + 120*84 + 84*10 }')
flops=$(awk -v f="$fwd" 'BEGIN { print 2 * (f + f + (f - 28*28*6*25)) }')
# The clock: cycles counted by perf (user space, the whole pacer process: data loading and
# evaluation included, so the share of peak is a slight underestimate), not a nominal
# frequency. Peak of one core: 2 FMA pipes x 8 float lanes (AVX2) x 2 FLOP = 32 FLOP/cycle.
peak_line=""
if command -v perf >/dev/null 2>&1; then
    perf stat -x, -e cycles:u -o "$TMP/perf.csv" $WORKER --spec "$TMP/spec.json" --summary "$TMP/perf.json" >/dev/null 2>&1
    cycles=$(awk -F, '$3 ~ /^cycles/ && $1 ~ /^[0-9]+$/ { print $1 }' "$TMP/perf.csv")
    if [ -n "$cycles" ]; then
        total=$(awk -v f="$flops" -v fw="$fwd" -v n="$(jq ".per_rank[0].samples" "$TMP/perf.json")" \
            'BEGIN { print f * n + 2 * fw * 10000 }')
        peak_line="pacer does $(awk -v c="$cycles" -v t="$total" 'BEGIN { printf "%.1f", t / c }') FLOP per cycle over its whole run ($(awk -v c="$cycles" -v t="$total" 'BEGIN { printf "%.0f", 100 * t / c / 32 }')% of one core's 32 FLOP/cycle AVX2 FMA peak; $flops FLOP per training sample, cycles from \\`perf stat -e cycles:u\\`, data loading included)."
    else
        peak_line="Share of peak not measured: perf cannot count cycles on this machine ($(grep -m1 -o 'not supported\|not counted\|Permission denied\|No permission' "$TMP/perf.csv" || echo 'no cycles line')); pacer does $flops FLOP per training sample."
    fi
else
    peak_line="Share of peak not measured: perf is not installed (Debian: linux-perf); pacer does $flops FLOP per training sample."
fi
md ""
md "### LeNet-5 training speed, one thread, batch 64 (\`sh bench/lenet_vs_pytorch.sh\`)"
md ""
md "| | samples/s (median of $RUNS) | peak RSS MB |"
md "|---|---|---|"
md "| pacer | $(printf %.0f "$p_sps") | $(printf %.0f "$p_rss") |"
md "| PyTorch $(jq -r .torch "$TMP/t1.json") | $(printf %.0f "$t_sps") | $(printf %.0f "$t_rss") |"
md ""
md "pacer / PyTorch speed: **$(ratio "$p_sps" "$t_sps")x** (target >= 1.5x); memory: pacer $(ratio "$p_rss" "$t_rss")x PyTorch's."
md "$peak_line"
