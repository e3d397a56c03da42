# The built-in GPT at nanoGPT's CPU shape (shakespeare_char's CPU recipe: 4 blocks, 4 heads,
# width 128, block 64, batch 12, dropout 0, AdamW), one thread: pacer's training tokens per
# second against PyTorch's (Debian's python3-torch, the same module as
# tests/tools/gpt_torch.py) on the same OpenBLAS, alternating runs, RUNS each (3), medians.
# The text is the GNU licenses of Debian's base-files (/usr/share/common-licenses: GPL 3,
# GPL 2, Apache 2.0; 1,400 windows of 64 bytes, 120 steps of 12). pacer's figure is the
# summary's train_tokens_per_s (its training loop: data, forward, backward, AdamW); torch's
# times its loop alone on windows cut beforehand. On CPU time too, steadier on a shared
# machine: pacer's is the whole process's (/usr/bin/time: start-up, data and evaluation
# included, against it), torch's its loop's (time.process_time).
# OPENBLAS_CORETYPE defaults to Haswell: both on OpenBLAS's AVX2 kernels, as the other CPU
# rows of docs/PERFORMANCE.md (OpenBLAS 0.3.21 takes a Xeon it does not know for Prescott,
# SSE3, for both); OPENBLAS_CORETYPE= leaves OpenBLAS its own choice.
. bench/lib.sh
RUNS=${RUNS:-3}
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
for i in $(seq "$RUNS"); do
    /usr/bin/time -f '%U %S' -o "$TMP/c$i" $WORKER --spec "$TMP/spec.json" --summary "$TMP/p$i.json" >/dev/null 2>&1 ||
        { echo "pacer-worker failed"; exit 1; }
    /usr/bin/python3 bench/torch_gpt.py "$TMP/text/train.txt" 4 4 128 64 12 120 >"$TMP/t$i.json" || exit 1
done
p=$(for i in $(seq "$RUNS"); do jq .train_tokens_per_s "$TMP/p$i.json"; done | median)
t=$(for i in $(seq "$RUNS"); do jq .tokens_per_s "$TMP/t$i.json"; done | median)
pc=$(for i in $(seq "$RUNS"); do awk -v n="$(jq .train_tokens "$TMP/p$i.json")" '{ print n / ($1 + $2) }' "$TMP/c$i"; done | median)
tc=$(for i in $(seq "$RUNS"); do jq .cpu_tokens_per_s "$TMP/t$i.json"; done | median)
blas=$(jq -r '.per_rank[0].device.blas' "$TMP/p1.json")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
md "GPT 4 x 128, block 64, batch 12, AdamW, one thread ($cpu; $blas; torch $(jq -r .torch "$TMP/t1.json")), median of $RUNS alternating runs, load $(uptime | sed 's/.*load average: //'):"
md "  pacer $(printf '%.0f' "$p") tokens/s, PyTorch $(printf '%.0f' "$t") tokens/s: pacer/PyTorch $(ratio "$p" "$t")"
md "  per CPU second: pacer $(printf '%.0f' "$pc") tokens, PyTorch $(printf '%.0f' "$tc"): pacer/PyTorch $(ratio "$pc" "$tc")"
