# Gradient compression of the model averages (issue 47's second step; worker/compress.h,
# worker/algo_local_sgd.c): local-sgd (2 ranks, H = 4) and hier-bsp (4 ranks in 2 groups
# of 2, k_steps 4: the two leaders average compressed) on LeNet-5 and a Fashion-MNIST
# subset (deterministic: same seed, same plan):
#   1. local-sgd: comm_bytes_per_step is measured for none (the average's
#      (61706 + 1) floats every 4th step), bf16 and powersgd rank 2 (at least 10x fewer
#      than none); each compressed run learns (an accuracy floor); PowerSGD's checkpoint
#      after step 20 carries both ranks' error feedback (compress_ranks 2) and a resume
#      from it finishes and learns.
#      The step records carry each step's comm_bytes (0 between averages) and, when
#      compressing, compression_ratio (absent uncompressed); compression's compute is
#      the "compress" phase of the averaging steps (0 elsewhere and uncompressed).
#   2. hier-bsp: PowerSGD compresses the leaders' averages only: comm_bytes_per_step is
#      the groups' uncompressed all-reduce and broadcast plus the compressed average,
#      exactly; the compression object's ratio is at least 10; it learns.
# (hpsgd: mpi_compress_hpsgd.sh; what is refused: mpi_compress.sh.)
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
PATCH=$BUILD/tools/ckpt_patch
NP=61706 # LeNet-5's parameters (no batch-norm buffers)
spec() { # NAME ALGO-JSON KIND WORKERS BATCH [EXTRA-TOP-JSON]
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 6400, "test_subset": 1000},
 "algorithm": {$2, "compression": {"kind": "$3", "rank": 2}}, "workers": $4, "batch_size": $5, "epochs": 1,
 "seed": 3, "log_every": 0, "optimizer": {"lr": 0.05, "momentum": 0.9}${6:-}}
JSON
}
run() { # NP NAME ARGS...
    np=$1 n=$2
    shift 2
    $MPIRUN -np "$np" $WORKER --spec "$TMP/$n.json" "$@" >"$TMP/$n.log" 2>&1 || { cat "$TMP/$n.log"; fail "$n failed"; }
}

# 1. local-sgd.
LOCAL='"name": "local-sgd", "local_steps": 4'
spec lnone "$LOCAL" none 2 32
spec lbf16 "$LOCAL" bf16 2 32
spec lpsgd "$LOCAL" powersgd 2 32 ", \"checkpoint\": {\"every_steps\": 10, \"dir\": \"$TMP/ck\"}"
for n in lnone lbf16; do run 2 $n --summary "$TMP/$n.out" --metrics "$TMP/$n.jsonl"; done
run 2 lpsgd --stop-after-steps 20
equals_num "local-sgd PowerSGD's step-20 checkpoint: compress_ranks" "$($PATCH "$TMP/ck/lpsgd.ckpt" compress_ranks)" 2
run 2 lpsgd --resume --summary "$TMP/lpsgd.out" --metrics "$TMP/lpsgd.jsonl"
grep -q "resumed from .* at step 20" "$TMP/lpsgd.log" || { cat "$TMP/lpsgd.log"; fail "local-sgd PowerSGD did not resume at step 20"; }
# 100 steps, an average every 4th: 25 averages of (NP + 1) floats.
equals_num "local-sgd uncompressed comm_bytes_per_step" "$(json "$TMP/lnone.out" .comm_bytes_per_step)" $(((NP + 1) * 4 / 4))
plain=$(json "$TMP/lnone.out" .comm_bytes_per_step)
p=$(json "$TMP/lpsgd.out" .comm_bytes_per_step)
at_most "local-sgd PowerSGD rank 2 comm_bytes_per_step (uncompressed $plain)" "$p" "$(awk -v b="$plain" 'BEGIN { print b / 10 }')"
at_most "local-sgd bf16 comm_bytes_per_step (uncompressed $plain)" "$(json "$TMP/lbf16.out" .comm_bytes_per_step)" \
    "$(awk -v b="$plain" 'BEGIN { print b / 1.9 }')"
need_number "local-sgd uncompressed test_accuracy" "$(json "$TMP/lnone.out" .test_accuracy)"
at_least "local-sgd bf16 test_accuracy" "$(json "$TMP/lbf16.out" .test_accuracy)" 0.6
at_least "local-sgd PowerSGD (resumed at step 20) test_accuracy" "$(json "$TMP/lpsgd.out" .test_accuracy)" 0.5
# The step records (worker/metrics.h): each step's bytes (an average every 4th step, 0
# between), the compression ratio only when compressing.
steps() { jq -c -s "[.[] | select(.kind == \"step\" and .rank == 0)] | $2" "$TMP/$1.jsonl"; }
[ "$(steps lnone 'map(.comm_bytes) | unique')" = "[0,$(((NP + 1) * 4))]" ] ||
    fail "local-sgd uncompressed step records' comm_bytes: $(steps lnone 'map(.comm_bytes) | unique')"
[ "$(steps lnone 'map(select(has("compression_ratio"))) | length')" = 0 ] ||
    fail "local-sgd uncompressed step records carry a compression_ratio"
c=$(json "$TMP/lpsgd.out" .compression.compressed_bytes_per_step)
[ "$(steps lpsgd 'map(.comm_bytes) | unique')" = "[0,$c]" ] ||
    fail "local-sgd PowerSGD step records' comm_bytes: $(steps lpsgd 'map(.comm_bytes) | unique'), want 0 and $c"
[ "$(steps lpsgd 'map(.compression_ratio) | unique | length')" = 1 ] || fail "local-sgd PowerSGD: the ratio changed"
r=$(steps lpsgd 'map(.compression_ratio) | .[0]')
want=$(json "$TMP/lpsgd.out" .compression.ratio)
awk -v a="$r" -v b="$want" 'BEGIN { exit !(a - b < 1e-4 && b - a < 1e-4) }' ||
    fail "local-sgd PowerSGD step records' compression_ratio $r, the summary's $want"
echo "ok: local-sgd step records: comm_bytes 0 or the average's, compression_ratio $r (summary $want)"
# Compression's own compute is a phase of its own (common/phases.h "compress"): booked in
# the steps that average compressed, 0 elsewhere and uncompressed; the phases still add
# up to step_s.
[ "$(steps lnone 'map(.phases.compress) | unique')" = "[0]" ] ||
    fail "local-sgd uncompressed: compress phase $(steps lnone 'map(.phases.compress) | unique')"
[ "$(steps lpsgd 'map(select(.comm_bytes > 0 and .phases.compress > 0)) | length')" = 20 ] ||
    fail "local-sgd PowerSGD: $(steps lpsgd 'map(select(.comm_bytes > 0 and .phases.compress > 0)) | length') of 20 averaging steps book compress time"
[ "$(steps lpsgd 'map(select(.comm_bytes == 0 and .phases.compress != 0)) | length')" = 0 ] ||
    fail "local-sgd PowerSGD: steps without an average book compress time"
[ "$(steps lpsgd 'map(select(((.phases | add) - .step_s | fabs) > ([0.02 * .step_s, 0.00001] | max))) | length')" = 0 ] ||
    fail "local-sgd PowerSGD: step records whose phases do not add up to step_s"
echo "ok: local-sgd PowerSGD books compress time in its 20 averaging steps only, $(steps lpsgd 'map(.phases.compress) | add') s in all"
echo "ok: local-sgd bytes per step $plain (none), $(json "$TMP/lbf16.out" .comm_bytes_per_step) (bf16), $p (powersgd rank 2, ratio $(awk -v a="$plain" -v b="$p" 'BEGIN { printf "%.1f", a / b }')); accuracy $(json "$TMP/lnone.out" .test_accuracy), $(json "$TMP/lbf16.out" .test_accuracy), $(json "$TMP/lpsgd.out" .test_accuracy)"

# 2. hier-bsp, 4 ranks in 2 groups.
HIER='"name": "hier-bsp", "k_steps": 4, "group_size": 2'
spec hnone "$HIER" none 4 16
spec hpsgd "$HIER" powersgd 4 16
for n in hnone hpsgd; do run 4 $n --summary "$TMP/$n.out"; done
# Per step: the group all-reduce (NP + 4 floats); every 4th step the broadcast (NP) and
# the leaders' average (NP + 1 plain; PowerSGD: its compressed bytes).
hplain=$(json "$TMP/hnone.out" .comm_bytes_per_step)
equals_num "hier-bsp uncompressed comm_bytes_per_step" "$hplain" $(((NP + 4) * 4 + (NP + NP + 1) * 4 / 4))
c=$(json "$TMP/hpsgd.out" .compression.compressed_bytes_per_step)
equals_num "hier-bsp PowerSGD comm_bytes_per_step" "$(json "$TMP/hpsgd.out" .comm_bytes_per_step)" \
    "$(awk -v n=$NP -v c="$c" 'BEGIN { print (n + 4) * 4 + (n * 4 + c) / 4 }')"
at_least "hier-bsp PowerSGD's compression ratio (the leaders' average)" "$(json "$TMP/hpsgd.out" .compression.ratio)" 10
need_number "hier-bsp uncompressed test_accuracy" "$(json "$TMP/hnone.out" .test_accuracy)"
at_least "hier-bsp PowerSGD test_accuracy" "$(json "$TMP/hpsgd.out" .test_accuracy)" 0.5
echo "ok: hier-bsp bytes per step $hplain (none), $(json "$TMP/hpsgd.out" .comm_bytes_per_step) (powersgd rank 2 on the leaders' average, ratio $(json "$TMP/hpsgd.out" .compression.ratio)); accuracy $(json "$TMP/hnone.out" .test_accuracy), $(json "$TMP/hpsgd.out" .test_accuracy)"

