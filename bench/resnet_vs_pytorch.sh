# ResNet-20 on a CIFAR-10 subset, batch 128, one thread: pacer against PyTorch (Debian's
# python3-torch, the network of bench/torch_gpu_bench.py) in the same run, alternating,
# RUNS runs each (default 3); medians of training samples/s (time inside the training
# loop). Also pacer's `threads: 2` run in the same rotation (its speedup over one thread)
# and the share of one core's peak FLOP rate pacer's one-thread median reaches. Wall time
# on a loaded machine moves with the other processes: each round also times the step on
# CPU time (build/bench/layer_profile for pacer, the loop's process time for PyTorch),
# and both ratios are printed. PyTorch's convolutions (oneDNN) run on the vector width of
# pacer's kernels (ONEDNN_MAX_CPU_ISA, lib.sh's torch_isa).
#   RUNS=5 SUBSET=3072 sh bench/resnet_vs_pytorch.sh
. bench/lib.sh
RUNS=${RUNS:-3}
SUBSET=${SUBSET:-3072}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
dir="$PACER_SHARED/datasets/cifar-10"
[ -d "$dir" ] || { md ""; md "(CIFAR-10 not found at $dir: resnet_vs_pytorch skipped)"; exit 0; }
# No augmentation (the PyTorch loop has none); the optimizer as torch_lenet.py's.
for t in 1 2; do
    cat > "$TMP/spec$t.json" <<JSON
{"name": "bench", "model": "resnet20", "dataset": {"name": "cifar10", "path": "$dir", "train_subset": $SUBSET,
 "test_subset": 1000, "augment": false}, "epochs": 1, "batch_size": 128,
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "threads": $t, "log_every": 0}
JSON
done
for i in $(seq "$RUNS"); do
    $WORKER --spec "$TMP/spec1.json" --summary "$TMP/p$i.json" >/dev/null 2>&1 || exit 1
    # PyTorch's convolutions on the vector width of pacer's (lib.sh's torch_isa)
    ONEDNN_MAX_CPU_ISA=$(torch_isa "$TMP/p$i.json") /usr/bin/python3 bench/torch_lenet.py 1 resnet20 "$SUBSET" 128 \
        > "$TMP/t$i.json" || exit 1
    $WORKER --spec "$TMP/spec2.json" --summary "$TMP/q$i.json" >/dev/null 2>&1 || exit 1
    # the same step on CPU time (a random fixed batch, no data loading, after two warm-up
    # steps): what the other processes of a loaded machine do not move, beside PyTorch's
    # steady_step_cpu_s (its steps after the first two)
    $BUILD/bench/layer_profile --batch 128 --steps 5 > "$TMP/l$i.txt" || exit 1
    # where the environment forces OpenBLAS's kernels, also its own choice, against
    # PyTorch with oneDNN's own (as lenet_vs_pytorch.sh)
    if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
        env -u OPENBLAS_CORETYPE $WORKER --spec "$TMP/spec1.json" --summary "$TMP/o$i.json" >/dev/null 2>&1 || exit 1
        env -u OPENBLAS_CORETYPE ONEDNN_MAX_CPU_ISA="$(torch_isa "$TMP/o$i.json")" /usr/bin/python3 bench/torch_lenet.py 1 \
            resnet20 "$SUBSET" 128 > "$TMP/u$i.json" || exit 1
    fi
done
med() { for i in $(seq "$RUNS"); do jq "$2" "$TMP/$1$i.json"; done | median; }
p_sps=$(med p .train_samples_per_s)
t_sps=$(med t .samples_per_s)
q_sps=$(med q .train_samples_per_s)
blas=$(jq -r '.per_rank[0].device | "\(.blas) (convolutions: \(.conv // "im2col-gemm"))"' "$TMP/p1.json")
p_cpu=$(for i in $(seq "$RUNS"); do sed -n 's/.*step_ms=\([0-9.]*\).*/\1/p' "$TMP/l$i.txt" | awk '{ print 128000 / $1 }'; done | median)
t_cpu=$(med t '128 / .steady_step_cpu_s')
# FLOPs per training sample, GEMM work only (2 per multiply-add; batch norm, ReLU, the adds
# and pooling are not counted). Multiply-adds forward, per convolution OH*OW*OC*C*9:
# conv1 3->16 at 32x32; 6 convs 16->16 at 32x32; 16->32 stride 2 to 16x16, then 5 of
# 32->32; 32->64 stride 2 to 8x8, then 5 of 64->64; fc 64->10. Backward: every weight
# gradient (as many as forward) and every input gradient but conv1's (its input is the
# image: pacer computes none).
fwd=$(awk 'BEGIN { s = 1024*16*27 + 6*1024*16*144 + 256*32*144 + 5*256*32*288 + 64*64*288 + 5*64*64*576 + 640; print s }')
flops=$(awk -v f="$fwd" 'BEGIN { print 2 * (3 * f - 1024*16*27) }')
# The share of peak: FLOP/s inside the training loop (wall time, so time the scheduler gave
# to other processes counts against pacer: a lower bound on a loaded machine) over one
# core's measured clock (build/bench/cpu_clock; see its limits) x 32 FLOP/cycle (2 FMA
# pipes x 8 float lanes x 2: AVX2, the kernels OPENBLAS_CORETYPE=Haswell selects).
# The FLOPs are a direct convolution's: since the 3x3 layers take Winograd's F(4x4, 3x3)
# (kernels/cpu/conv_winograd.c), which does a quarter of their multiplies, this is an
# effective rate and can pass 100%.
if hz=$($BUILD/bench/cpu_clock) && [ -n "$hz" ]; then
    share() { awk -v s="$1" -v f="$flops" -v h="$hz" 'BEGIN { printf "%.1f FLOP/cycle, %.0f%%", s * f / h, 100 * s * f / h / 32 }'; }
    peak_line="pacer's one-thread median on $blas kernels: **$(share "$p_cpu") of one core's 32 FLOP/cycle AVX2 FMA peak on CPU time** ($(share "$p_sps") on wall time, a lower bound on a loaded machine); target >= 50%. $flops FLOP per training sample as a direct convolution does them (Winograd's layers do fewer: an effective rate), clock $(awk -v h="$hz" 'BEGIN { printf "%.2f", h / 1e9 }') GHz from build/bench/cpu_clock."
else
    peak_line="Share of peak not measured: build/bench/cpu_clock did not run; pacer does $flops FLOP per training sample."
fi
md ""
md "### ResNet-20 training speed, CIFAR-10 ($SUBSET images), batch 128 (\`RUNS=$RUNS sh bench/resnet_vs_pytorch.sh\`)"
md ""
md "Load average before the runs: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)."
md ""
md "| | threads | OpenBLAS kernels | samples/s (median of $RUNS, alternating) | samples per CPU second (steps after the first two) |"
md "|---|---|---|---|---|"
md "| pacer | 1 | $blas${OPENBLAS_CORETYPE:+ (OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE in the environment)} | $(printf %.1f "$p_sps") | $(printf %.1f "$p_cpu") (build/bench/layer_profile) |"
md "| PyTorch $(jq -r .torch "$TMP/t1.json") | 1 | oneDNN convolutions, ONEDNN_MAX_CPU_ISA=$(jq -r .onednn_isa "$TMP/t1.json") | $(printf %.1f "$t_sps") | $(printf %.1f "$t_cpu") |"
md "| pacer | 2 (\`threads: 2\`) | $blas | $(printf %.1f "$q_sps") | – |"
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
    o_sps=$(med o .train_samples_per_s)
    u_sps=$(med u .samples_per_s)
    md "| pacer | 1 | $(jq -r '.per_rank[0].device | "\(.blas) (convolutions: \(.conv // "im2col-gemm"))"' "$TMP/o1.json") (OpenBLAS's own choice) | $(printf %.1f "$o_sps") | – |"
    md "| PyTorch $(jq -r .torch "$TMP/u1.json") | 1 | oneDNN convolutions, ONEDNN_MAX_CPU_ISA=$(jq -r .onednn_isa "$TMP/u1.json") | $(printf %.1f "$u_sps") | $(printf %.1f "$(med u '128 / .steady_step_cpu_s')") |"
fi
md ""
md "pacer / PyTorch, one thread: **$(ratio "$p_sps" "$t_sps")x** on wall time, **$(ratio "$p_cpu" "$t_cpu")x** on CPU time, on $blas kernels against PyTorch on the same vector width${OPENBLAS_CORETYPE:+, $(ratio "$o_sps" "$u_sps")x with both on their own choice} (target >= 1.5x); pacer \`threads: 2\` / 1: **$(ratio "$q_sps" "$p_sps")x** (target >= 1.7x)."
md "$peak_line"
