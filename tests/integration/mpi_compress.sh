# Gradient compression in ssgd (issue 47's first step; worker/compress.h), 2 ranks of
# LeNet-5 on a Fashion-MNIST subset (every run deterministic: same seed, same plan):
#   1. comm_bytes_per_step is measured for every kind: none sends the whole fused buffer
#      ((61706 + 4) floats), bf16 half of it (plus the 16-byte extras), PowerSGD rank 2
#      at least 10x fewer; each compressed run learns (an accuracy floor, and within 5
#      points of the uncompressed run).
#   2. PowerSGD (with warm-up steps, unequal batches 24 and 40: compression applies to
#      the batch-weighted gradients) stopped at step 20 and resumed (the plan from the
#      checkpoint) ends bit for bit where an uninterrupted run does (ckpt_diff,
#      tolerance 0): the checkpoint carries Q and
#      both ranks' error feedback (compress_ranks 2); the same resume with the errors
#      zeroed in the file ends elsewhere, so the errors are what makes it exact.
#      One process (no mpirun) reports no comm_bytes_per_step: it hands nothing to MPI.
#   3. A compression the algorithm cannot do (asgd's powersgd) is refused before training,
#      naming why (async_compress.sh tests asgd's bf16).
. tests/integration/compress_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
PATCH=$BUILD/tools/ckpt_patch
DIFF=$BUILD/tools/ckpt_diff
spec() { # NAME KIND [EXTRA-COMPRESSION-JSON] [EXTRA-TOP-JSON]
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 6400, "test_subset": 1000},
 "algorithm": {"name": "ssgd", "max_batch": 64, "compression": {"kind": "$2"${3:-}}}, "workers": 2, "batch_size": 32, "epochs": 1,
 "seed": 3, "log_every": 0, "optimizer": {"lr": 0.05, "momentum": 0.9}${4:-}}
JSON
}

# 1. Bytes and learning.
spec none none
spec bf16 bf16
spec psgd powersgd ', "rank": 2'
for n in none bf16 psgd; do run2 $n --summary "$TMP/$n.out"; done
equals_num "uncompressed comm_bytes_per_step" "$(json "$TMP/none.out" .comm_bytes_per_step)" $(((61706 + 4) * 4))
equals_num "bf16 comm_bytes_per_step" "$(json "$TMP/bf16.out" .comm_bytes_per_step)" $((61706 * 2 + 16))
plain=$(json "$TMP/none.out" .comm_bytes_per_step)
p=$(json "$TMP/psgd.out" .comm_bytes_per_step)
at_most "PowerSGD rank 2 comm_bytes_per_step (uncompressed $plain)" "$p" "$(awk -v b="$plain" 'BEGIN { print b / 10 }')"
equals_num "PowerSGD's summary: compressed_bytes_per_step" "$(json "$TMP/psgd.out" .compression.compressed_bytes_per_step)" "$p"
equals_num "PowerSGD's compressed matrices (conv2, fc1, fc2)" "$(json "$TMP/psgd.out" .compression.matrices)" 3
learns_near none 0.65 0.05 bf16 psgd
base=$(json "$TMP/none.out" .test_accuracy)
echo "ok: bytes per step $plain (none), $(json "$TMP/bf16.out" .comm_bytes_per_step) (bf16), $p (powersgd rank 2); accuracy $base, $(json "$TMP/bf16.out" .test_accuracy), $(json "$TMP/psgd.out" .test_accuracy)"

# One process (workers: 1, no mpirun) compresses the same way but hands nothing to MPI:
# no comm_bytes_per_step (unmeasured is missing, not 0).
sed 's/"workers": 2/"workers": 1/' "$TMP/psgd.json" >"$TMP/one.json"
$WORKER --spec "$TMP/one.json" --summary "$TMP/one.out" >"$TMP/one.log" 2>&1 || { cat "$TMP/one.log"; fail "one process failed"; }
[ "$(json "$TMP/one.out" .comm_bytes_per_step)" = null ] || fail "one process reports comm_bytes_per_step $(json "$TMP/one.out" .comm_bytes_per_step)"
equals_num "one process: PowerSGD's compressed matrices" "$(json "$TMP/one.out" .compression.matrices)" 3
echo "ok: one process compresses and reports no comm_bytes_per_step"

# 2. Resume bit for bit.
spec full powersgd ', "rank": 2, "warmup_steps": 5' ", \"checkpoint\": {\"every_steps\": 10, \"dir\": \"$TMP/full\"}"
spec cut powersgd ', "rank": 2, "warmup_steps": 5' ", \"checkpoint\": {\"every_steps\": 10, \"dir\": \"$TMP/cut\"}"
run2 full --batch-plan 24,40 --summary "$TMP/full.out"
run2 cut --batch-plan 24,40 --stop-after-steps 20
cp "$TMP/cut/cut.ckpt" "$TMP/step20.ckpt"
equals_num "the step-20 checkpoint's compress_ranks" "$($PATCH "$TMP/step20.ckpt" compress_ranks)" 2
q=$($PATCH "$TMP/step20.ckpt" compress_q_floats)
e=$($PATCH "$TMP/step20.ckpt" compress_err_floats)
at_least "the step-20 checkpoint's compress_q_floats" "$q" 1
run2 cut --resume
grep -q "resumed from .* at step 20" "$TMP/cut.log" || { cat "$TMP/cut.log"; fail "PowerSGD did not resume at step 20"; }
"$DIFF" "$TMP/full/full.ckpt" "$TMP/cut/cut.ckpt" 0 || fail "PowerSGD stopped at 20 and resumed differs from the uninterrupted run"
at_least "PowerSGD with batches 24 and 40, test_accuracy after one epoch" "$(json "$TMP/full.out" .test_accuracy)" 0.65
echo "ok: PowerSGD stopped at step 20 and resumed ends bit for bit where the uninterrupted run does"
# The control: the same checkpoint with both ranks' errors zeroed (the floats before the
# CRC) resumes to other weights.
zeroed_errors_diverge "$TMP/step20.ckpt" "$e"

# 3. Not wired: refused before training.
cat >"$TMP/as.json" <<JSON
{"name": "as", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 640},
 "algorithm": {"name": "asgd", "compression": {"kind": "powersgd"}}, "workers": 2, "epochs": 1}
JSON
expect_error 2 "algorithm.compression.kind: powersgd needs one Q shared by all ranks, which the asynchronous pushes of asgd do not have" \
    $MPIRUN -np 3 $WORKER --spec "$TMP/as.json"
