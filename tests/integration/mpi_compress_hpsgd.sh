# Gradient compression in hpsgd (issue 47; worker/algo_hpsgd.c): each round's weighted
# window goes through the compressor with the round's collectives still non-blocking
# (PowerSGD's P, then its Q, chained). 2 ranks of LeNet-5 on a Fashion-MNIST subset, the
# rounds fixed at 2 local steps (--hpsgd-round-steps: every run deterministic):
#   1. comm_bytes_per_step is measured for every kind; bf16 sends half of the plain
#      round, PowerSGD rank 2 at least 10x fewer; each compressed run learns (a floor of
#      0.5, 5x chance, and within 10 points of the uncompressed run: hpsgd's rounds of 2
#      local steps carry the BLAS kernels' rounding far; over seeds 1-5 and OpenBLAS's
#      Haswell, SkylakeX and Prescott kernels the uncompressed run ended at 0.64-0.76 and
#      PowerSGD 6.4 points below it to 3.6 above, and 1,000 test images alone give a
#      difference of two runs 2 points of standard error). The compression object's plain
#      bytes are a plain round's (the window and 2 extras), its compressed bytes bf16's.
#   2. PowerSGD stopped in its second epoch and resumed from the first epoch end's
#      checkpoint (keep_best writes one there; every rank then holds the merged model)
#      ends bit for bit where an uninterrupted run does: the checkpoint carries Q and both
#      ranks' error feedback. Momentum 0: hpsgd's momentum is each rank's own and a
#      checkpoint holds rank 0's, so only without it is even the uncompressed resume exact.
#      The same resume with the errors zeroed in the file ends elsewhere.
#   3. Warm-up steps are refused with hpsgd before training.
. tests/integration/compress_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
PATCH=$BUILD/tools/ckpt_patch
DIFF=$BUILD/tools/ckpt_diff
spec() { # NAME KIND [EXTRA-COMPRESSION-JSON] [EXTRA-TOP-JSON] [MOMENTUM]
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 6400, "test_subset": 1000},
 "algorithm": {"name": "hpsgd", "compression": {"kind": "$2"${3:-}}}, "workers": 2, "batch_size": 32, "epochs": 1,
 "seed": 3, "log_every": 0, "optimizer": {"lr": 0.05, "momentum": ${5:-0.9}}${4:-}}
JSON
}
run2() { # NAME ARGS...
    n=$1
    shift
    $MPIRUN -np 2 $WORKER --spec "$TMP/$n.json" --hpsgd-round-steps 2 "$@" >"$TMP/$n.log" 2>&1 ||
        { cat "$TMP/$n.log"; fail "$n failed"; }
}

# 1. Bytes and learning.
spec none none
spec bf16 bf16
spec psgd powersgd ', "rank": 2'
for n in none bf16 psgd; do run2 $n --summary "$TMP/$n.out"; done
plain=$(json "$TMP/none.out" .comm_bytes_per_step)
b=$(json "$TMP/bf16.out" .comm_bytes_per_step)
p=$(json "$TMP/psgd.out" .comm_bytes_per_step)
need_number "uncompressed comm_bytes_per_step" "$plain"
# The same rounds in every run: bf16 sends 2 bytes a parameter and 16 exact bytes a round
# where the plain round sends 4 a parameter and 8 more.
between "bf16 comm_bytes_per_step (uncompressed $plain)" "$b" "$(awk -v b="$plain" 'BEGIN { print b * 0.499 }')" \
    "$(awk -v b="$plain" 'BEGIN { print b * 0.501 }')"
at_most "PowerSGD rank 2 comm_bytes_per_step (uncompressed $plain)" "$p" "$(awk -v b="$plain" 'BEGIN { print b / 10 }')"
equals_num "PowerSGD's compressed matrices (conv2, fc1, fc2)" "$(json "$TMP/psgd.out" .compression.matrices)" 3
# One round's bytes in the compression object: a plain round is the window and its 2
# extras (LeNet-5's 61706 parameters), a bf16 round the words and 4 exact extras.
for n in bf16 psgd; do
    equals_num "$n compression.plain_bytes_per_step (a plain round)" \
        "$(json "$TMP/$n.out" .compression.plain_bytes_per_step)" $(((61706 + 2) * 4))
done
equals_num "bf16 compression.compressed_bytes_per_step (a round)" \
    "$(json "$TMP/bf16.out" .compression.compressed_bytes_per_step)" $((61706 * 2 + 16))
learns_near none 0.5 0.1 bf16 psgd
base=$(json "$TMP/none.out" .test_accuracy)
echo "ok: hpsgd bytes per step $plain (none), $b (bf16), $p (powersgd rank 2); accuracy $base, $(json "$TMP/bf16.out" .test_accuracy), $(json "$TMP/psgd.out" .test_accuracy)"

# 2. Resume bit for bit from an epoch end (3200 samples, global batch 64: 50 steps an epoch).
spec full powersgd ', "rank": 2' ", \"checkpoint\": {\"every_steps\": 100000, \"keep_best\": true, \"dir\": \"$TMP/full\"}" 0
spec cut powersgd ', "rank": 2' ", \"checkpoint\": {\"every_steps\": 100000, \"keep_best\": true, \"dir\": \"$TMP/cut\"}" 0
for n in full cut; do
    sed -i 's/"train_subset": 6400, "test_subset": 1000/"train_subset": 3200, "test_subset": 200/; s/"epochs": 1/"epochs": 2/' "$TMP/$n.json"
done
run2 full
run2 cut --stop-after-steps 53
cp "$TMP/cut/cut.ckpt" "$TMP/epoch1.ckpt"
equals_num "the epoch-1 checkpoint's global step" "$($PATCH "$TMP/epoch1.ckpt" global_step)" 50
equals_num "the epoch-1 checkpoint's compress_ranks" "$($PATCH "$TMP/epoch1.ckpt" compress_ranks)" 2
e=$($PATCH "$TMP/epoch1.ckpt" compress_err_floats)
at_least "the epoch-1 checkpoint's compress_q_floats" "$($PATCH "$TMP/epoch1.ckpt" compress_q_floats)" 1
run2 cut --resume
grep -q "resumed from .* at step 50" "$TMP/cut.log" || { cat "$TMP/cut.log"; fail "hpsgd did not resume at step 50"; }
"$DIFF" "$TMP/full/full.ckpt" "$TMP/cut/cut.ckpt" 0 || fail "hpsgd with PowerSGD resumed from epoch 1 differs from the uninterrupted run"
echo "ok: hpsgd with PowerSGD resumed from the epoch-1 checkpoint ends bit for bit where the uninterrupted run does"
zeroed_errors_diverge "$TMP/epoch1.ckpt" "$e"

# 3. No warm-up in hpsgd.
spec hw powersgd ', "warmup_steps": 5'
expect_error 2 "algorithm.compression.warmup_steps: hpsgd has no warm-up (its ranks start a round at different steps); set 0" \
    $MPIRUN -np 2 $WORKER --spec "$TMP/hw.json"
