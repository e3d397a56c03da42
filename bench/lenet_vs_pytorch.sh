# LeNet-5 on Fashion-MNIST, batch 64, one thread: pacer against PyTorch (Debian's
# python3-torch) in the same run, alternating, 3 runs each; medians of training samples/s
# (time inside the training loop) and of peak RSS. Also the fraction of the CPU's peak
# FLOP/s that pacer reaches.
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
# LeNet-5 multiply-adds per sample forward: conv1 28*28*6*25, conv2 10*10*16*150, fc 400*120 +
# 120*84 + 84*10; training ~ 3x forward (forward, input grads, weight grads), 2 FLOP per MAC.
flops=$(awk 'BEGIN { macs = 28*28*6*25 + 10*10*16*150 + 400*120 + 120*84 + 84*10; print 3 * 2 * macs }')
mhz=$(awk -F: '/cpu MHz/ { print $2; exit }' /proc/cpuinfo)
# Peak of one core: 2 FMA pipes x 8 float lanes (AVX2) x 2 FLOP = 32 FLOP per cycle.
peak=$(awk -v m="$mhz" 'BEGIN { print m * 1e6 * 32 }')
frac=$(awk -v s="$p_sps" -v f="$flops" -v p="$peak" 'BEGIN { printf "%.1f", 100 * s * f / p }')
md ""
md "### LeNet-5 training speed, one thread, batch 64 (\`sh bench/lenet_vs_pytorch.sh\`)"
md ""
md "| | samples/s (median of $RUNS) | peak RSS MB |"
md "|---|---|---|"
md "| pacer | $(printf %.0f "$p_sps") | $(printf %.0f "$p_rss") |"
md "| PyTorch $(jq -r .torch "$TMP/t1.json") | $(printf %.0f "$t_sps") | $(printf %.0f "$t_rss") |"
md ""
md "pacer / PyTorch speed: **$(ratio "$p_sps" "$t_sps")x** (target >= 1.5x); memory: pacer $(ratio "$p_rss" "$t_rss")x PyTorch's."
md "pacer reaches $frac% of one core's peak ($(printf %.0f "$mhz") MHz x 32 FLOP/cycle, $flops FLOP per training sample)."
