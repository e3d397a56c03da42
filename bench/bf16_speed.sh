# precision bf16 against fp32 and PyTorch: the built-in GPT trained on one thread at two
# shapes, pacer fp32, pacer bf16, PyTorch fp32 and PyTorch with autocast bf16 (Debian's
# python3-torch: oneDNN's AMX or AVX512-BF16 kernels where the CPU has them; what a
# PyTorch user switches on), taking turns, RUNS rounds (3), medians of tokens per second:
#   nanoGPT's CPU shape: 4 blocks x 4 heads x 128 wide, block 64, batch 12, STEPS (80);
#   GPT-2 124M's width: 12 x 12 x 768, block 64, batch 4, STEPS2 (8), a vocabulary of 256
#   bytes (not GPT-2's 50,257: the head is 0.2 M parameters, not 38.6 M).
# The text is the GNU licenses of Debian's base-files. pacer's figure is the summary's
# train_tokens_per_s, PyTorch's its training loop's (bench/torch_gpt.py); both AdamW.
# Each shape also gives the steady state: the median of each run's steps after its first
# (pacer's --metrics lines, PyTorch's step_s_median), medians over the rounds. A run of
# STEPS2 (8) steps at GPT-2's width is a third first step: the optimizer state's and the
# arenas' pages are faulted in there, on both sides.
# Then each run's peak RSS (pacer's summary) at GPT-2's width, fp32 against bf16, and
# bench/gemm_bf16's products at a GPT's shapes against oneDNN's bf16 matmul (libdnnl-dev).
# OPENBLAS_CORETYPE is left to OpenBLAS (its own choice on this CPU, printed).
. bench/lib.sh
gpt_text_bench 3
spec() { gpt_text_spec bf16-bench "$@"; } # NAME PRECISION L H E T B SUBSET
# pacer_run SPEC STEPS TAG I
pacer_run() {
    "$WORKER" --spec "$TMP/$1.json" --summary "$TMP/$3.$4.json" --metrics "$TMP/$3.$4.jsonl" \
        --stop-after-steps "$2" >/dev/null 2>&1 ||
        { echo "pacer-worker ($3) failed"; exit 1; }
}
torch_run() { # SHAPE-ARGS... -- TAG I AUTOCAST
    tag=$1 i=$2 ac=$3
    shift 3
    TORCH_GPT_AUTOCAST=$ac /usr/bin/python3 bench/torch_gpt.py "$TMP/text/train.txt" "$@" >"$TMP/$tag.$i.json" ||
        { echo "torch_gpt ($tag) failed"; exit 1; }
}
med() { for i in $(seq "$RUNS"); do jq ".$2" "$TMP/$1.$i.json"; done | median; }
# steady TAG: pacer's step time after the first, ms (the rounds' median of each run's median)
steady() {
    for i in $(seq "$RUNS"); do
        jq -r 'select(.kind == "step" and .step > 1) | .step_s' "$TMP/$1.$i.jsonl" | median
    done | median | awk '{ printf "%.1f", 1000 * $1 }'
}
# steady_torch TAG: the same of PyTorch's runs, ms
steady_torch() { med "$1" step_s_median | awk '{ printf "%.1f", 1000 * $1 }'; }
# first TAG: pacer's first step, s (the rounds' median); first_torch TAG: PyTorch's
first() {
    for i in $(seq "$RUNS"); do jq -r 'select(.kind == "step" and .step == 1) | .step_s' "$TMP/$1.$i.jsonl"; done |
        median | awk '{ printf "%.2f", $1 }'
}
first_torch() { med "$1" step1_s | awk '{ printf "%.2f", $1 }'; }
shape() { # NAME L H E T B STEPS SUBSET
    name=$1 L=$2 H=$3 E=$4 T=$5 B=$6 steps=$7 n=$8
    spec "${name}32" fp32 "$L" "$H" "$E" "$T" "$B" "$n"
    spec "${name}16" bf16 "$L" "$H" "$E" "$T" "$B" "$n"
    for i in $(seq "$RUNS"); do
        pacer_run "${name}32" "$steps" "${name}p32" "$i"
        torch_run "${name}t32" "$i" "" "$L" "$H" "$E" "$T" "$B" "$steps"
        pacer_run "${name}16" "$steps" "${name}p16" "$i"
        torch_run "${name}t16" "$i" bf16 "$L" "$H" "$E" "$T" "$B" "$steps"
    done
    p32=$(med "${name}p32" train_tokens_per_s) p16=$(med "${name}p16" train_tokens_per_s)
    t32=$(med "${name}t32" tokens_per_s) t16=$(med "${name}t16" tokens_per_s)
    md "GPT $L x $H x $E, block $T, batch $B, $steps steps, one thread, median of $RUNS rounds (tokens/s):"
    md "  pacer fp32 $(printf '%.0f' "$p32"), pacer bf16 $(printf '%.0f' "$p16") ($(jq -r .kernels.gemm "$TMP/${name}p16.1.json")), PyTorch fp32 $(printf '%.0f' "$t32"), PyTorch autocast bf16 $(printf '%.0f' "$t16")"
    md "  pacer bf16 / PyTorch autocast $(ratio "$p16" "$t16"); pacer bf16 / pacer fp32 $(ratio "$p16" "$p32"); PyTorch autocast / fp32 $(ratio "$t16" "$t32")"
    s32=$(steady "${name}p32") s16=$(steady "${name}p16") u32=$(steady_torch "${name}t32") u16=$(steady_torch "${name}t16")
    md "  steady state, a step after the first (ms): pacer fp32 $s32, pacer bf16 $s16, PyTorch fp32 $u32, PyTorch autocast bf16 $u16"
    md "  steady state: pacer bf16 / PyTorch autocast $(ratio "$u16" "$s16"); pacer bf16 / pacer fp32 $(ratio "$s32" "$s16")"
    md "  the first step (s): pacer fp32 $(first "${name}p32"), pacer bf16 $(first "${name}p16"), PyTorch fp32 $(first_torch "${name}t32"), PyTorch autocast bf16 $(first_torch "${name}t16")"
}
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
units=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|amx_bf16|amx_tile)$' | tr '\n' ' ')
md "bf16_speed on $cpu ($(nproc --all) cores; $units), torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), load $(uptime | sed 's/.*load average: //'):"
shape nano 4 4 128 64 12 "$STEPS" 1440
blas=$(jq -r '.per_rank[0].device.blas' "$TMP/nanop32.1.json")
md "  (pacer fp32 on OpenBLAS's $blas kernels)"
shape gpt2 12 12 768 64 4 "$STEPS2" 256
m32=$(med gpt2p32 peak_rss_mb) m16=$(med gpt2p16 peak_rss_mb)
md "  peak RSS at GPT-2's width: fp32 $(printf '%.0f' "$m32") MB, bf16 $(printf '%.0f' "$m16") MB (bf16 stores in bf16 the outputs only products or their GELU read: the layer norms', q, k and v, the attention's, mlp.c_fc's and the GELUs', and the attention's weights as triangles; the others float32; on one thread no packed weight kept: B is packed a chunk at a time)"
md "bf16 products at a GPT's shapes (GFLOP/s, one thread):"
"$BUILD/bench/gemm_bf16" --reps 20 2>/dev/null | tee -a "$OUT"
