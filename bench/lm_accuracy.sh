# The language-model accuracy evidence: nanoGPT's CPU recipe for shakespeare_char (4 blocks,
# 4 heads, width 128, block 64, batch 12, dropout 0, AdamW lr 1e-3 with betas [0.9, 0.99],
# weight decay 0.1 on the 2-D tensors, gradient clipped at norm 1, linear warm-up over the
# first 5% of the steps, cosine to 1e-4) with bytes as tokens (vocabulary 256), on a text no
# test uses: Debian's fortune cookies (packages fortunes and fortunes-min, fetched with
# `apt-get download` into KEEP when /usr/share/games/fortunes lacks them: their 43 files in
# name order, 2,576,674 bytes), split 90/10 as nanoGPT's prepare.py splits its text (the
# first 90% train.txt, the rest val.txt). Per seed, from the same initial weights (the ones
# pacer-worker initialises its built-in GPT with for the seed; tests/tools/gpt_tool writes
# them, bench/torch_lm_accuracy.py loads them into tests/tools/gpt_torch.py's module):
#   torch    PyTorch, one process, batch 12 (bench/torch_lm_accuracy.py: pacer's sampling
#            rule, non-overlapping windows shuffled per epoch, with torch's own draws)
#   pacer    pacer-worker's built-in GPT, one rank, batch 12
#   equal    4 ranks (mpirun), ssgd, batch 3 each (the same global batch), dynamic batching
#   unequal  the same with emulated slowdowns SLOW (default [1, 1, 2, 4] scaled to the cores
#            by fit_slowdowns: [4, 4, 8, 16] on 2 cores)
#   bf16     pacer's one rank with "precision": "bf16" (its products' operands in bf16, on
#            the CPU's AMX or AVX512-BF16 where it has them); not in the default CONFIGS
# ITERS steps in one epoch over the first 12 x ITERS training windows; the validation loss
# (nats per token) over the first VAL windows of val.txt. Goals: pacer within 0.02 nats of
# torch; unequal within 0.02 of equal; bf16 within 0.02 of pacer (means over the seeds). Seeds run one after the other;
# CONFIGS runs some of the four only (CONFIGS="" none: the table reads what KEEP holds).
# pacer's runs keep their final weights ($KEEP/CFG.SEED.onnx) and the table says in how many
# bytes the 4-rank runs' differ from the 1-rank run's.
#   SEEDS="1 2 3" ITERS=2000 VAL=4000 sh bench/lm_accuracy.sh
. bench/lib.sh
SEEDS=${SEEDS:-1 2 3}
ITERS=${ITERS:-2000}
VAL=${VAL:-4000}
SLOW=${SLOW:-$(fit_slowdowns "[1, 1, 2, 4]")}
KEEP=${KEEP:-$BUILD/bench/lm_accuracy}
CONFIGS=${CONFIGS-torch pacer equal unequal}
# LOG_EVERY: progress lines every N steps in each run's log (0 = none)
LOG_EVERY=${LOG_EVERY:-0}
TOOL=$BUILD/tools/gpt_tool
WARMUP=$((ITERS / 20))
[ -x "$TOOL" ] || { echo "lm_accuracy: $TOOL is not built (make $TOOL)"; exit 1; }
mkdir -p "$KEEP/text"
# the text: the fortune files of fortunes and fortunes-min, installed or fetched
src=/usr/share/games/fortunes
if [ ! -f "$src/computers" ] || [ ! -f "$src/riddles" ]; then
    src=$KEEP/deb/usr/share/games/fortunes
    if [ ! -f "$src/computers" ]; then
        (cd "$KEEP" && apt-get download fortunes fortunes-min) >"$TMP/apt.log" 2>&1 ||
            { cat "$TMP/apt.log"; echo "lm_accuracy: apt-get download fortunes fortunes-min failed"; exit 1; }
        for d in "$KEEP"/fortunes*.deb; do dpkg-deb -x "$d" "$KEEP/deb" || exit 1; done
    fi
fi
find "$src" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' | LC_ALL=C sort | xargs cat >"$TMP/all.txt"
n=$(wc -c <"$TMP/all.txt")
# written aside and moved in only when they differ: a run of other seeds beside this one may
# have the files mapped (a file cut short under a mapping kills its reader)
head -c $((n * 9 / 10)) "$TMP/all.txt" >"$TMP/train.txt"
tail -c +$((n * 9 / 10 + 1)) "$TMP/all.txt" >"$TMP/val.txt"
for f in train.txt val.txt; do cmp -s "$TMP/$f" "$KEEP/text/$f" || mv "$TMP/$f" "$KEEP/text/$f"; done
nfiles=$(find "$src" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' | wc -l)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# spec SEED WORKERS BATCH SLOWDOWN [PRECISION] - pacer's spec of the runs ($TMP/spec.json)
spec() {
    algo='"name": "sgd"'
    [ "$2" -gt 1 ] && algo='"name": "ssgd", "dynamic_batch": true'
    cat >"$TMP/spec.json" <<JSON
{"name": "lm-acc", "seed": $1, "precision": "${5:-fp32}",
 "model": {"gpt": {"layers": 4, "heads": 4, "embd": 128, "block_size": 64, "dropout": 0.0}},
 "dataset": {"format": "text", "path": "$KEEP/text", "train_subset": $((12 * ITERS)), "test_subset": $VAL},
 "epochs": 1, "batch_size": $3, "workers": $2, "threads": 1, "device": "cpu", "log_every": $LOG_EVERY,
 "algorithm": {$algo}, "emulate": {"slowdown": $4},
 "optimizer": {"kind": "adamw", "lr": 0.001, "weight_decay": 0.1, "betas": [0.9, 0.99], "eps": 1e-8, "clip_norm": 1.0,
               "lr_schedule": {"kind": "cosine", "warmup_epochs": $(awk -v w=$WARMUP -v n=$ITERS 'BEGIN { print w / n }'), "min_lr": 0.0001}}}
JSON
}
for seed in $SEEDS; do
    for cfg in $CONFIGS; do
        echo "seed $seed $cfg from $(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg)"
        case $cfg in
        torch)
            /usr/bin/python3 bench/torch_lm_accuracy.py "$TOOL" "$TMP/init" "$KEEP/text" 4 4 128 64 "$seed" \
                $((12 * ITERS)) 1 12 0.001 0.0001 "$WARMUP" 0.1 0.9 0.99 1.0 "$VAL" "$LOG_EVERY" >"$KEEP/torch.$seed.json" 2>"$KEEP/torch.$seed.log" ||
                { tail -3 "$KEEP/torch.$seed.log"; echo "lm_accuracy: torch failed"; exit 1; } ;;
        pacer)
            spec "$seed" 1 12 "[]"
            $WORKER --spec "$TMP/spec.json" --summary "$KEEP/pacer.$seed.json" --export-onnx "$KEEP/pacer.$seed.onnx" >"$KEEP/pacer.$seed.log" 2>&1 ||
                { tail -3 "$KEEP/pacer.$seed.log"; echo "lm_accuracy: pacer failed"; exit 1; } ;;
        bf16)
            spec "$seed" 1 12 "[]" bf16
            $WORKER --spec "$TMP/spec.json" --summary "$KEEP/bf16.$seed.json" >"$KEEP/bf16.$seed.log" 2>&1 ||
                { tail -3 "$KEEP/bf16.$seed.log"; echo "lm_accuracy: pacer bf16 failed"; exit 1; } ;;
        equal | unequal)
            slow="[]"
            [ "$cfg" = unequal ] && slow=$SLOW
            spec "$seed" 4 3 "$slow"
            $MPIRUN -np 4 $WORKER --spec "$TMP/spec.json" --summary "$KEEP/$cfg.$seed.json" --export-onnx "$KEEP/$cfg.$seed.onnx" >"$KEEP/$cfg.$seed.log" 2>&1 ||
                { tail -3 "$KEEP/$cfg.$seed.log"; echo "lm_accuracy: pacer $cfg failed"; exit 1; } ;;
        *) echo "lm_accuracy: unknown configuration $cfg"; exit 2 ;;
        esac
        cut -d' ' -f1-3 /proc/loadavg >"$KEEP/$cfg.$seed.load"
    done
done
# loss CFG - the seeds' validation losses of a configuration, one a line (the runs KEEP holds)
loss() { seed_field "$1" test_loss; }
# verdict A B - A's mean validation loss against B's: the difference (A - B, nats per token,
# rounded to 0.001 as printed) and the goal, |difference| <= 0.02
verdict() {
    [ -n "$(loss "$1")" ] && [ -n "$(loss "$2")" ] || { echo "not measured"; return; }
    awk -v a="$(loss "$1" | awk '{ s += $1 } END { print s / NR }')" -v b="$(loss "$2" | awk '{ s += $1 } END { print s / NR }')" \
        'BEGIN { d = sprintf("%.3f", a - b); printf "%+.3f nats: %s", d, (d + 0 <= 0.02 && d + 0 >= -0.02 ? "met" : "**missed**") }'
}
# differs CFG - per seed, the bytes of CFG's final weights (--export-onnx) that differ from
# the 1-rank run's: the summaries' losses are float32, whose resolution (2.4e-7 near 2.6)
# hides the last bits in which 4 ranks' sums of gradients differ from one rank's
differs() {
    for s in $SEEDS; do
        [ -f "$KEEP/pacer.$s.onnx" ] && [ -f "$KEEP/$1.$s.onnx" ] &&
            echo "seed $s $(cmp -l "$KEEP/pacer.$s.onnx" "$KEEP/$1.$s.onnx" | wc -l)"
    done | paste -sd, | sed 's/,/, /g'
}
plan=$(seed_plans)
first=$(echo $SEEDS | cut -d' ' -f1)
u="$KEEP/unequal.$first.json"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
md ""
md "### nanoGPT's CPU recipe on Debian's fortunes, PyTorch against pacer (\`SEEDS=\"$SEEDS\" ITERS=$ITERS VAL=$VAL SLOW=\"$SLOW\" sh bench/lm_accuracy.sh\`)"
md ""
md "GPT 4 x 128, 4 heads, block 64, dropout 0, bytes (vocabulary 256); the $nfiles fortune files of Debian's fortunes and fortunes-min ($n bytes), the first 90% train.txt, the rest val.txt;" \
    "$ITERS steps of 12 windows (one epoch over the first $((12 * ITERS)) training windows), AdamW lr 1e-3, betas [0.9, 0.99], weight decay 0.1 (1-D tensors exempt), clip 1.0," \
    "warm-up $WARMUP steps, cosine to 1e-4; validation loss over the first $VAL windows of val.txt. 4 ranks: ssgd, 3 windows each, dynamic batching;" \
    "unequal: slowdowns $SLOW$([ -f "$u" ] && echo " (faithful by the summary's demand: $(faithful "$u"))")${plan:+; $plan}." \
    "$cpu, $(nproc) cores shared with other work; load average before: $load0, after each run: torch $(seed_loads torch), pacer $(seed_loads pacer), equal $(seed_loads equal), unequal $(seed_loads unequal)."
md ""
md "| configuration | validation loss per seed ($SEEDS) | mean ± sd | training s per run |"
md "|---|---|---|---|"
for cfg in torch pacer equal unequal bf16; do
    [ -n "$(loss $cfg)" ] || continue
    md "| $cfg | $(loss $cfg | xargs -r printf '%.4f ')| $(loss $cfg | meansd 4) | $(seed_field $cfg train_s | meansd 0) |"
done
md ""
md "Goal, pacer within 0.02 nats of PyTorch: $(verdict pacer torch). Goal, unequal speeds within 0.02 of equal: $(verdict unequal equal). Goal, bf16 within 0.02 of fp32 (pacer): $(verdict bf16 pacer)$([ -f "$KEEP/bf16.$first.json" ] && echo " (bf16 on $(jq -r .kernels.gemm "$KEEP/bf16.$first.json"))")."
for cfg in equal unequal; do
    d=$(differs $cfg)
    [ -z "$d" ] || md "Bytes of $cfg's final weights that differ from the 1-rank run's (of $(wc -c <"$(ls "$KEEP"/pacer.*.onnx | head -1)") per file): $d."
done
