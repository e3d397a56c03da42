# bench/bf16_acts.sh - bf16 activations (model/plan.h's act_bf16: a layer norm's output that
# only Linear layers read, a GELU's that only a Linear layer and its own backward read, a
# fused attention's output and its q, k and v, and mlp.c_fc's output, rounded for its GELU
# either way (rounded), stored in bf16; with them act_shared: the Linear outputs only the
# residual add after them reads, in one slot) on against off, in one build: the built-in GPT
# at precision bf16 on one thread, pacer-worker with PACER_BF16_ACTS=0 (every activation
# float32, the products rounding them as before) and without it, taking turns (the order
# flipping every round, so drift in the machine's load favours neither), RUNS rounds (5),
# medians and the per-round ratios' median:
#   nanoGPT's CPU shape: 4 blocks x 4 heads x 128 wide, block 64, batch 12, STEPS (80):
#   tokens/s;
#   GPT-2 124M's width: 12 x 12 x 768, block 64, batch 4, STEPS2 (8), a vocabulary of 256
#   bytes: tokens/s and peak RSS (the summary's peak_rss_mb).
# The text and the specs are bf16_speed.sh's (bench/lib.sh's gpt_text_bench and
# gpt_text_spec). Both settings compute the same bits
# (tests/unit/test_bf16_acts.c), so only time and memory differ.
. bench/lib.sh
gpt_text_bench 5
spec() { gpt_text_spec bf16-acts "$1" bf16 "$2" "$3" "$4" "$5" "$6" "$7"; } # NAME L H E T B SUBSET
run() { # SPEC STEPS ACTS(0|1) I
    PACER_BF16_ACTS=$3 "$WORKER" --spec "$TMP/$1.json" --summary "$TMP/$1.$3.$4.json" --stop-after-steps "$2" \
        >/dev/null 2>&1 || { echo "pacer-worker ($1, PACER_BF16_ACTS=$3) failed"; exit 1; }
}
med() { for i in $(seq "$RUNS"); do jq ".$3" "$TMP/$1.$2.$i.json"; done | median; }
shape() { # NAME L H E T B STEPS SUBSET
    name=$1
    spec "$name" "$2" "$3" "$4" "$5" "$6" "$8"
    for i in $(seq "$RUNS"); do
        if [ $((i % 2)) -eq 1 ]; then run "$name" "$7" 0 "$i" && run "$name" "$7" 1 "$i"
        else run "$name" "$7" 1 "$i" && run "$name" "$7" 0 "$i"; fi
    done
    off=$(med "$name" 0 train_tokens_per_s) on=$(med "$name" 1 train_tokens_per_s)
    r=$(for i in $(seq "$RUNS"); do
        ratio "$(jq .train_tokens_per_s "$TMP/$name.1.$i.json")" "$(jq .train_tokens_per_s "$TMP/$name.0.$i.json")"
        echo
    done | median)
    md "GPT $2 x $3 x $4, block $5, batch $6, $7 steps, bf16 ($(jq -r .kernels.gemm "$TMP/$name.1.1.json")), one thread, median of $RUNS alternating rounds (tokens/s):"
    md "  float32 activations $(printf '%.0f' "$off"), bf16 activations $(printf '%.0f' "$on"): $(ratio "$on" "$off") (the rounds' ratios' median $r)"
    md "  peak RSS: float32 activations $(printf '%.0f' "$(med "$name" 0 peak_rss_mb)") MB, bf16 activations $(printf '%.0f' "$(med "$name" 1 peak_rss_mb)") MB"
}
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
md "bf16_acts on $cpu ($(nproc --all) cores), $(git rev-parse --short HEAD 2>/dev/null), $(date -u '+%F %H:%M') UTC, load $(uptime | sed 's/.*load average: //'):"
shape nano 4 4 128 64 12 "$STEPS" 1440
shape gpt2 12 12 768 64 4 "$STEPS2" 256
md "  (done at load $(uptime | sed 's/.*load average: //'))"
