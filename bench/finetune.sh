# The fine-tuning evidence: a GPT pretrained on one text and fine-tuned on another for a
# fixed number of steps, against training from scratch for the same steps.
#   pretraining   nanoGPT's CPU recipe (GPT 4 x 128, 4 heads, block 64, bytes as tokens) on
#                 Debian's fortunes (bench/lm_accuracy.sh prepares the text: CONFIGS="" runs
#                 only that), PRE steps, one rank, seed 1; its final weights exported with
#                 --export-safetensors
#   the new text  the licence texts every Debian system has (/usr/share/common-licenses, its
#                 regular files in name order), the first 90% train.txt, the rest val.txt
#   per seed      STEPS steps on the new text, 2 ranks (ssgd, 6 windows each: the global
#                 batch of 12), AdamW lr LR, cosine to LR / 10 after a 5% warm-up, from
#     scratch     the seed's random weights
#     full        the pretrained weights ("init": {"safetensors": ...}), every tensor trained
#     lora        the pretrained weights frozen, adapters of rank 8 (alpha 16) on the
#                 attention's and the MLP's four products of every block
# The table: the validation loss (nats per token, the first VAL windows of val.txt), the
# trainable parameters, the all-reduce bytes per step (comm_bytes_per_step) and the ranks'
# peak RSS (peak_rss_mb). EMBD sets the width (128), LORA_LR LoRA's learning rate (LR's). Goals: full and lora below scratch; lora within 0.05 nats of full
# with under 5% of the parameters trainable.
#   SEEDS="1 2 3" PRE=2000 STEPS=300 sh bench/finetune.sh
#   SEEDS="1 2 3" PRE=2000 STEPS=300 EMBD=256 LORA_LR=0.003 KEEP=build/bench/finetune256 sh bench/finetune.sh
. bench/lib.sh
SEEDS=${SEEDS:-1 2 3}
PRE=${PRE:-2000}
STEPS=${STEPS:-300}
VAL=${VAL:-2000}
LR=${LR:-0.001}
LORA_LR=${LORA_LR:-$LR}
EMBD=${EMBD:-128}
CONFIGS=${CONFIGS-scratch full lora}
KEEP=${KEEP:-$BUILD/bench/finetune}
FORTUNES=$BUILD/bench/lm_accuracy/text
mkdir -p "$KEEP/text"
if [ ! -f "$FORTUNES/train.txt" ]; then
    CONFIGS="" KEEP="$BUILD/bench/lm_accuracy" OUT=/dev/null sh bench/lm_accuracy.sh >/dev/null || { echo "finetune: the fortunes text could not be prepared"; exit 1; }
fi
find /usr/share/common-licenses -maxdepth 1 -type f | LC_ALL=C sort | xargs cat >"$TMP/all.txt"
n=$(wc -c <"$TMP/all.txt")
[ "$n" -gt 100000 ] || { echo "finetune: /usr/share/common-licenses holds only $n bytes"; exit 1; }
head -c $((n * 9 / 10)) "$TMP/all.txt" >"$KEEP/text/train.txt"
tail -c +$((n * 9 / 10 + 1)) "$TMP/all.txt" >"$KEEP/text/val.txt"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# spec SEED WORKERS BATCH STEPS TEXT EXTRA [LR] - the runs' spec ($TMP/spec.json)
spec() {
    lr=${7:-$LR}
    algo='"name": "sgd"'
    [ "$2" -gt 1 ] && algo='"name": "ssgd"'
    cat >"$TMP/spec.json" <<JSON
{"name": "finetune", "seed": $1,
 "model": {"gpt": {"layers": 4, "heads": 4, "embd": $EMBD, "block_size": 64, "dropout": 0.0}},
 "dataset": {"format": "text", "path": "$5", "train_subset": $(($2 * $3 * $4)), "test_subset": $VAL},
 "epochs": 1, "batch_size": $3, "workers": $2, "threads": 1, "device": "cpu",
 "algorithm": {$algo},
 "optimizer": {"kind": "adamw", "lr": $lr, "weight_decay": 0.1, "betas": [0.9, 0.99], "eps": 1e-8, "clip_norm": 1.0,
               "lr_schedule": {"kind": "cosine", "warmup_epochs": 0.05, "min_lr": $(awk -v l=$lr 'BEGIN { print l / 10 }')}}$6}
JSON
}
if [ ! -f "$KEEP/pre.safetensors" ] || [ ! -f "$KEEP/pre.$PRE.$EMBD.done" ]; then
    echo "pretraining $PRE steps from $(date -u +%H:%M:%S)"
    spec 1 1 12 "$PRE" "$FORTUNES" ""
    $WORKER --spec "$TMP/spec.json" --summary "$KEEP/pre.json" --export-safetensors "$KEEP/pre.safetensors" \
        >"$KEEP/pre.log" 2>&1 || { tail -3 "$KEEP/pre.log"; echo "finetune: pretraining failed"; exit 1; }
    rm -f "$KEEP"/pre.*.done && touch "$KEEP/pre.$PRE.$EMBD.done"
fi
INIT=', "init": {"safetensors": "'$KEEP/pre.safetensors'"}'
TARGETS='"transformer.h.*.attn.c_attn.weight", "transformer.h.*.attn.c_proj.weight", "transformer.h.*.mlp.c_fc.weight", "transformer.h.*.mlp.c_proj.weight"'
LORA=$INIT', "lora": {"rank": 8, "alpha": 16, "targets": ['$TARGETS']}'
for seed in $SEEDS; do
    for cfg in $CONFIGS; do
        echo "seed $seed $cfg from $(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg)"
        case $cfg in
        scratch) extra="" lr=$LR ;;
        full) extra=$INIT lr=$LR ;;
        lora) extra=$LORA lr=$LORA_LR ;;
        *) echo "finetune: unknown configuration $cfg"; exit 2 ;;
        esac
        spec "$seed" 2 6 "$STEPS" "$KEEP/text" "$extra" "$lr"
        $MPIRUN -np 2 $WORKER --spec "$TMP/spec.json" --summary "$KEEP/$cfg.$seed.json" >"$KEEP/$cfg.$seed.log" 2>&1 ||
            { tail -3 "$KEEP/$cfg.$seed.log"; echo "finetune: $cfg failed"; exit 1; }
        cut -d' ' -f1-3 /proc/loadavg >"$KEEP/$cfg.$seed.load"
    done
done
loss() { seed_field "$1" test_loss; }
mean() { awk '{ s += $1 } END { if (NR) printf "%.4f", s / NR }'; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
md ""
md "### Fine-tuning a GPT on a new text (\`SEEDS=\"$SEEDS\" PRE=$PRE STEPS=$STEPS VAL=$VAL LR=$LR LORA_LR=$LORA_LR EMBD=$EMBD sh bench/finetune.sh\`)"
md ""
md "GPT 4 x $EMBD, 4 heads, block 64, bytes; pretrained $PRE steps on Debian's fortunes (pretraining's validation loss $(jq -r .test_loss "$KEEP/pre.json" 2>/dev/null | xargs printf '%.4f'));" \
    "then $STEPS steps on /usr/share/common-licenses ($n bytes, 90/10), 2 ranks (ssgd, 6 windows each), AdamW lr $LR (LoRA's $LORA_LR), cosine to a tenth;" \
    "validation loss over the first $VAL windows of its val.txt. LoRA: rank 8, alpha 16, on c_attn, attn.c_proj, c_fc and mlp.c_proj of every block." \
    "$cpu, $(nproc) cores shared with other work; load average before: $load0."
md ""
md "| configuration | validation loss per seed ($SEEDS) | mean ± sd | trainable parameters | all-reduce bytes per step | peak RSS per rank (MB) |"
md "|---|---|---|---|---|---|"
first=$(echo $SEEDS | cut -d' ' -f1)
for cfg in scratch full lora; do
    [ -n "$(loss $cfg)" ] || continue
    f=$KEEP/$cfg.$first.json
    md "| $cfg | $(loss $cfg | xargs -r printf '%.4f ')| $(loss $cfg | meansd 4) | $(jq -r '"\(.trainable_parameters) of \(.trainable_parameters + .frozen_parameters)"' "$f") | $(jq -r '.comm_bytes_per_step | floor' "$f") | $(seed_field $cfg peak_rss_mb | meansd 0) |"
done
if [ -n "$(loss scratch)" ] && [ -n "$(loss full)" ] && [ -n "$(loss lora)" ]; then
    s=$(loss scratch | mean) f=$(loss full | mean) l=$(loss lora | mean)
    share=$(jq -r '100 * .trainable_parameters / (.trainable_parameters + .frozen_parameters)' "$KEEP/lora.$first.json")
    md ""
    md "$(awk -v s="$s" -v f="$f" -v l="$l" -v p="$share" 'BEGIN {
        printf "Goals: full fine-tuning below scratch (%+.4f nats: %s); LoRA below scratch (%+.4f: %s); ", f - s, f < s ? "met" : "**missed**", l - s, l < s ? "met" : "**missed**";
        d = l - f; printf "LoRA within 0.05 nats of full (%+.4f: %s) with %.2f%% of the parameters trainable (under 5%%: %s).", d, (d <= 0.05 ? "met" : "**missed**"), p, (p < 5 ? "met" : "**missed**") }')"
fi
