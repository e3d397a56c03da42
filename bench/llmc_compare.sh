# GPT-2 124M's shape at B=4, T=64, one thread: pacer's built-in gpt against llm.c's CPU
# reference (train_gpt2.c, built here from a checkout given as the argument; none of its
# code is in this repository) and against PyTorch (bench/torch_gpt.py, the same OpenBLAS
# kernels as pacer), the three taking turns, RUNS rounds (3), STEPS steps each (4; the
# first is dropped as warm-up, the median of the others is the run's figure). Also each
# run's peak resident memory (VmHWM), with pacer's set against the sum of its parameters,
# gradients, AdamW's two moments and the activations.
#
# usage: sh bench/llmc_compare.sh LLMC_DIR   (e.g. a `git clone https://github.com/karpathy/llm.c`)
#   RUNS=3 STEPS=4 LLMC_RUNS=$RUNS TEXT=FILE CC=gcc OPENBLAS_CORETYPE=Haswell override;
#   llm.c runs in the first LLMC_RUNS rounds only (its step is the slowest of the three,
#   about 18 CPU s, and it evaluates 5 batches before its first: a round of all three
#   takes a shared 2-core machine half an hour)
#
# llm.c is built as its Makefile builds train_gpt2 (-Ofast -march=native -fopenmp -DOMP:
# its own loops, auto-vectorised at the CPU's full width) and runs with OMP_NUM_THREADS=1.
# It reads gpt2_124M.bin and two token shards from fixed paths under its working
# directory; without the internet, bench/llmc_gpt2_data.py writes them here: a GPT-2 124M
# checkpoint of random weights (GPT-2's initialisation) and llm.c shards of TEXT's words
# (default: Debian's /usr/share/common-licenses). pacer reads the same shards as a
# `"format": "tokens"` data set; its model is {"gpt": "gpt2"}'s shape with 64 positions
# (the window; llm.c's checkpoint keeps 1024 rows of positions and 50304 of vocabulary,
# of which a step at T=64 reads 64 and computes 50304 logits). No tokenizer file:
# train_gpt2.c warns and goes on (it needs one only to print samples, at its step 20).
# All three use AdamW (llm.c: lr 1e-4, no decay; pacer the same; PyTorch its script's).
#
# What is compared is each step's CPU time: a watcher outside the processes reads
# /proc/PID/stat (utime + stime) every 0.25 s and notes it when a step ends (llm.c's
# "step N" line, a step record in pacer's --metrics file, torch_gpt.py's "step N" mark),
# so that neighbours on a shared machine, which stretch wall time, move the figures
# little; the wall time per step is printed beside it. Every process's CPU time counts
# all its threads (one BLAS thread, one OpenMP thread; pacer's metrics thread).
# OPENBLAS_CORETYPE defaults to Haswell (AVX2), as the other CPU rows of
# docs/PERFORMANCE.md: OpenBLAS 0.3.21 takes unknown Xeons for Prescott (SSE3).
. bench/lib.sh
LLMC=${1:?usage: sh bench/llmc_compare.sh LLMC_DIR}
RUNS=${RUNS:-3}
STEPS=${STEPS:-4}
LLMC_RUNS=${LLMC_RUNS:-$RUNS}
CC=${CC:-gcc}
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-Haswell}
[ -f "$LLMC/train_gpt2.c" ] || { echo "llmc_compare: no train_gpt2.c in $LLMC"; exit 1; }
[ "$STEPS" -ge 2 ] || { echo "llmc_compare: STEPS must be at least 2 (the first is dropped)"; exit 1; }
$CC -Ofast -march=native -fopenmp -DOMP -Wno-unused-result "$LLMC/train_gpt2.c" -lm -o "$TMP/train_gpt2" ||
    { echo "llmc_compare: building $LLMC/train_gpt2.c failed"; exit 1; }
llmc_rev=$(git -C "$LLMC" rev-parse --short HEAD 2>/dev/null || echo "not a git checkout")

if [ -n "${TEXT:-}" ]; then cp "$TEXT" "$TMP/text.txt"; else cat /usr/share/common-licenses/* >"$TMP/text.txt"; fi
mkdir -p "$TMP/data" "$TMP/llmc/dev/data/tinyshakespeare" "$TMP/tok"
/usr/bin/python3 bench/llmc_gpt2_data.py "$TMP/data" "$TMP/text.txt" || exit 1
ln -s "$TMP/data/gpt2_124M.bin" "$TMP/llmc/gpt2_124M.bin"
ln -s "$TMP/data/train.bin" "$TMP/llmc/dev/data/tinyshakespeare/tiny_shakespeare_train.bin"
ln -s "$TMP/data/val.bin" "$TMP/llmc/dev/data/tinyshakespeare/tiny_shakespeare_val.bin"
ln -s "$TMP/data/train.bin" "$TMP/data/val.bin" "$TMP/tok/"
cat >"$TMP/pacer.json" <<JSON
{"name": "gpt2-llmc", "model": {"gpt": {"layers": 12, "heads": 12, "embd": 768, "block_size": 64, "vocab_size": 50257}},
 "dataset": {"format": "tokens", "path": "$TMP/tok", "vocab_size": 50257, "test_subset": 4},
 "batch_size": 4, "epochs": 1, "threads": 1, "device": "cpu", "log_every": 0, "checkpoint": {"dir": "$TMP/ckpt"},
 "optimizer": {"kind": "adamw", "lr": 0.0001, "weight_decay": 0.0, "betas": [0.9, 0.999], "eps": 1e-8}}
JSON
TCK=$(getconf CLK_TCK)

# watch NAME MARKFILE PATTERN PID: until MARKFILE holds STEPS lines matching PATTERN (or
# the process ends), note "step cpu_s wall_s" at each new one into $TMP/NAME.steps and the
# process's last VmHWM (KiB) into $TMP/NAME.hwm; then stop the process.
watch() {
    name=$1 file=$2 pat=$3 pid=$4 seen=0
    : >"$TMP/$name.steps"
    while kill -0 "$pid" 2>/dev/null; do
        n=$(grep -c "$pat" "$file" 2>/dev/null || true)
        st=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | awk -v t="$TCK" '{ print ($12 + $13) / t }')
        hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
        [ -n "$hwm" ] && echo "$hwm" >"$TMP/$name.hwm"
        if [ -n "$st" ] && [ "${n:-0}" -gt "$seen" ]; then
            seen=$n
            echo "$seen $st $(date +%s.%N)" >>"$TMP/$name.steps"
            [ "$seen" -ge "$STEPS" ] && break
        fi
        sleep 0.25
    done
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [ "$seen" -ge "$STEPS" ] || { echo "llmc_compare: $name stopped after $seen of $STEPS steps:"; tail -5 "$TMP/$name.log"; exit 1; }
}
# per_step NAME COLUMN: the median over steps 2..STEPS of the CPU (2) or wall (3) seconds
per_step() {
    awk -v c="$2" 'NR > 1 { print $c - p } { p = $c }' "$TMP/$1.steps" | median
}

: >"$TMP/all"
for i in $(seq "$RUNS"); do
    rm -f "$TMP/pacer.jsonl"
    $WORKER --spec "$TMP/pacer.json" --stop-after-steps "$STEPS" --metrics "$TMP/pacer.jsonl" \
        >"$TMP/pacer.log" 2>&1 &
    watch pacer "$TMP/pacer.jsonl" '"kind":"step"' $!
    if [ "$i" -le "$LLMC_RUNS" ]; then
        (cd "$TMP/llmc" && exec env OMP_NUM_THREADS=1 stdbuf -oL "$TMP/train_gpt2") >"$TMP/llmc.log" 2>&1 &
        watch llmc "$TMP/llmc.log" '^step ' $!
    fi
    TORCH_GPT_MARKS=1 /usr/bin/python3 bench/torch_gpt.py "$TMP/data/train.bin" 12 12 768 64 4 "$STEPS" 50257 \
        >"$TMP/torch.out" 2>"$TMP/torch.log" &
    watch torch "$TMP/torch.log" '^step ' $!
    : >"$TMP/round"
    for s in pacer llmc torch; do
        [ "$s" = llmc ] && [ "$i" -gt "$LLMC_RUNS" ] && continue
        echo "$s $(per_step $s 2) $(per_step $s 3) $(cat "$TMP/$s.hwm")" | tee -a "$TMP/all" >>"$TMP/round"
    done
    echo "round $i ($(uptime | sed 's/.*load average: //')): $(awk '{ printf "%s%s %.2f CPU s, %.2f wall s a step, VmHWM %.0f MiB", (NR > 1 ? "; " : ""), $1, $2, $3, $4 / 1024 }' "$TMP/round")"
done
med() { awk -v s="$1" -v c="$2" '$1 == s { print $c }' "$TMP/all" | median; }
pc=$(med pacer 2) lc=$(med llmc 2) tc=$(med torch 2)
pw=$(med pacer 3) lw=$(med llmc 3) tw=$(med torch 3)
tok=256 # B x T
params=$(sed -n 's/.*: \([0-9]*\) parameters.*/\1/p' "$TMP/pacer.log" | head -1)
# llm.c's count of the forward's activations (its fill_in_activation_sizes) at pacer's
# vocabulary: per block 18 x BTC + 4 x BT + 2 x B NH T T, then 2 x BTC + 3 x BT + 2 x BTV
acts=$(awk 'BEGIN { B = 4; T = 64; C = 768; NH = 12; L = 12; V = 50257
    print L * (18 * B * T * C + 4 * B * T + 2 * B * NH * T * T) + 2 * B * T * C + 3 * B * T + 2 * B * T * V }')
need=$(awk -v p="$params" -v a="$acts" 'BEGIN { printf "%.0f", (16 * p + 4 * a) / 1048576 }')
hwm=$(med pacer 4 | awk '{ printf "%.0f", $1 / 1024 }')
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) vCPUs"
md ""
md "GPT-2 124M's shape (12 x 768, 12 heads, vocabulary 50257), B=4, T=64, AdamW, one thread ($cpu; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-its own}; llm.c $llmc_rev, $CC -Ofast -march=native -fopenmp, OMP_NUM_THREADS=1), medians over $RUNS rounds (llm.c: $LLMC_RUNS) of the per-step median of steps 2..$STEPS, load $(uptime | sed 's/.*load average: //'):"
if [ "$LLMC_RUNS" -gt 0 ]; then
    md "  CPU s a step: pacer $pc, llm.c $lc, PyTorch $tc; tokens per CPU second: pacer $(ratio "$tok" "$pc"), llm.c $(ratio "$tok" "$lc"), PyTorch $(ratio "$tok" "$tc")"
    md "  pacer against llm.c $(ratio "$lc" "$pc")x (goal >= 2), against PyTorch $(ratio "$tc" "$pc")x (goal >= 1.5) on CPU time; on wall time (pacer $pw, llm.c $lw, PyTorch $tw s a step) $(ratio "$lw" "$pw")x and $(ratio "$tw" "$pw")x"
else
    md "  CPU s a step: pacer $pc, PyTorch $tc (llm.c not run); pacer against PyTorch $(ratio "$tc" "$pc")x (goal >= 1.5) on CPU time, $(ratio "$tw" "$pw")x on wall time (pacer $pw, PyTorch $tw s a step)"
fi
md "  peak memory (VmHWM): pacer $hwm MiB against $need MiB of parameters, gradients, two moments (16 bytes x $params) and activations ($acts floats, llm.c's count): $(ratio "$hwm" "$need")x (goal <= 1.2); PyTorch $(med torch 4 | awk '{ printf "%.0f", $1 / 1024 }') MiB${lc:+, llm.c $(med llmc 4 | awk '{ printf "%.0f", $1 / 1024 }') MiB}"
