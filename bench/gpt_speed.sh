# The built-in GPT at nanoGPT's CPU shape (shakespeare_char's CPU recipe: 4 blocks, 4 heads,
# width 128, block 64, batch 12, dropout 0, AdamW), one thread: pacer's training tokens per
# second against PyTorch's (Debian's python3-torch, the same module as
# tests/tools/gpt_torch.py) on the same OpenBLAS, alternating runs, RUNS each (3), medians.
# The text is the GNU licenses of Debian's base-files (/usr/share/common-licenses: GPL 3,
# GPL 2, Apache 2.0; 1,009 windows of 64 bytes, 84 steps of 12); each side trains STEPS
# steps (80) of 12 windows. pacer's figure is the summary's train_tokens_per_s (its training
# loop: data, forward, backward, AdamW); torch's times its loop alone on windows cut
# beforehand. On CPU time too, steadier on a shared machine: pacer's is the whole process's
# (/usr/bin/time: start-up and data included, against it), torch's its loop's
# (time.process_time). pacer stops after STEPS steps through --stop-after-steps, as if
# interrupted: so it does not pay the summary's train_loss, a forward over every training
# window (1,009 windows: about 28% of the process's CPU time when it was included), nor a
# final checkpoint, neither of which PyTorch's loop does.
# BASE=PATH runs a second pacer-worker (an earlier build) in the same alternation, for a
# before/after figure on the same load.
# OPENBLAS_CORETYPE defaults to Haswell: both on OpenBLAS's AVX2 kernels, as the other CPU
# rows of docs/PERFORMANCE.md (OpenBLAS 0.3.21 takes a Xeon it does not know for Prescott,
# SSE3, for both); OPENBLAS_CORETYPE= leaves OpenBLAS its own choice.
. bench/lib.sh
RUNS=${RUNS:-3}
STEPS=${STEPS:-80}
BASE=${BASE:-}
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-Haswell}
LIC=/usr/share/common-licenses
mkdir -p "$TMP/text"
cat "$LIC/GPL-3" "$LIC/GPL-2" "$LIC/Apache-2.0" >"$TMP/text/train.txt"
head -c 4096 "$LIC/LGPL-2.1" >"$TMP/text/val.txt"
cat >"$TMP/spec.json" <<JSON
{"name": "gpt-bench", "model": {"gpt": {"layers": 4, "heads": 4, "embd": 128, "block_size": 64}},
 "dataset": {"format": "text", "path": "$TMP/text", "train_subset": 1440, "test_subset": 12},
 "batch_size": 12, "epochs": 1, "threads": 1, "device": "cpu", "log_every": 0,
 "optimizer": {"kind": "adamw", "lr": 0.001, "weight_decay": 0.1}}
JSON
# pacer_run BIN TAG I: one pacer run, its summary in $TMP/TAG.I.json, its CPU in $TMP/TAG.I.cpu
pacer_run() {
    /usr/bin/time -f '%U %S' -o "$TMP/$2.$3.cpu" "$1" --spec "$TMP/spec.json" --summary "$TMP/$2.$3.json" \
        --stop-after-steps "$STEPS" >/dev/null 2>&1 || { echo "pacer-worker ($1) failed"; exit 1; }
    [ "$(jq .steps "$TMP/$2.$3.json")" = "$STEPS" ] || { echo "gpt_speed: $1 did not train $STEPS steps"; exit 1; }
}
# tokens per second (wall, from the summary) and per CPU second of a pacer TAG's runs
pacer_wall() { for i in $(seq "$RUNS"); do jq .train_tokens_per_s "$TMP/$1.$i.json"; done | median; }
pacer_cpu() {
    for i in $(seq "$RUNS"); do awk -v n="$(jq .train_tokens "$TMP/$1.$i.json")" '{ print n / ($1 + $2) }' "$TMP/$1.$i.cpu"; done | median
}
for i in $(seq "$RUNS"); do
    pacer_run "$WORKER" p "$i"
    /usr/bin/python3 bench/torch_gpt.py "$TMP/text/train.txt" 4 4 128 64 12 "$STEPS" >"$TMP/t$i.json" || exit 1
    [ -z "$BASE" ] || pacer_run "$BASE" b "$i"
done
p=$(pacer_wall p) pc=$(pacer_cpu p)
t=$(for i in $(seq "$RUNS"); do jq .tokens_per_s "$TMP/t$i.json"; done | median)
tc=$(for i in $(seq "$RUNS"); do jq .cpu_tokens_per_s "$TMP/t$i.json"; done | median)
blas=$(jq -r '.per_rank[0].device.blas' "$TMP/p.1.json")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
md "GPT 4 x 128, block 64, batch 12, AdamW, one thread, $STEPS steps ($cpu; $blas; torch $(jq -r .torch "$TMP/t1.json")), median of $RUNS alternating runs, load $(uptime | sed 's/.*load average: //'):"
md "  pacer $(printf '%.0f' "$p") tokens/s, PyTorch $(printf '%.0f' "$t") tokens/s: pacer/PyTorch $(ratio "$p" "$t")"
md "  per CPU second: pacer $(printf '%.0f' "$pc") tokens, PyTorch $(printf '%.0f' "$tc"): pacer/PyTorch $(ratio "$pc" "$tc")"
[ -z "$BASE" ] || md "  BASE ($BASE): $(printf '%.0f' "$(pacer_wall b)") tokens/s, $(printf '%.0f' "$(pacer_cpu b)") per CPU second: pacer/BASE $(ratio "$p" "$(pacer_wall b)") (wall), $(ratio "$pc" "$(pacer_cpu b)") (CPU); BASE/PyTorch $(ratio "$(pacer_cpu b)" "$tc") (CPU)"
