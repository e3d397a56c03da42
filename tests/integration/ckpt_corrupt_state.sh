# Corrupt optimizer state in a checkpoint with a valid CRC (worker/checkpoint.h,
# checkpoint_parse): every float array a resume restores is checked before anything is
# restored, and a refusal names the file, the array, the element (and its tensor) and its
# value; pacer-worker exits 2 and never trains on. Forged with tests/tools/ckpt_patch (one
# float set, the CRC recomputed), on generated data (no data set needed):
#   1. one process, AdamW: a NaN parameter, an infinite first moment and one of 1e30, a
#      negative, a NaN and a 1e30 second moment are each refused (1e30 in the first moment
#      used to resume and end at 0.117 accuracy against 0.719, health "ok"); the unforged
#      checkpoint resumes. SGD's momentum of 1e30 too.
#   2. 2 ranks of ssgd with PowerSGD: the step-20 checkpoint holds both ranks' error
#      feedback; an error of 1e30 (which used to resume and train on, silently, to 0.13
#      accuracy where the run had 0.47) and a NaN Q are refused by every rank.
# The parameter-server workers' error-feedback files (CKPT.ef<index>) are checked in
# async_compress.sh, which writes them.
. tests/lib.sh
PATCH=$BUILD/tools/ckpt_patch
[ -x "$PATCH" ] || fail "$PATCH not built (make)"
$BUILD/tools/gen_dataset idx "$TMP/data" 640 100 7 || fail "cannot generate IDX files"
spec() { # FILE NAME EXTRA
    cat >"$1" <<JSON
{"name": "$2", "model": "lenet5", "dataset": {"name": "mnist", "path": "$TMP/data"}, "batch_size": 32,
 "epochs": 1, "seed": 7, "log_every": 0, "device": "cpu", "checkpoint": {"every_steps": 10, "dir": "$TMP/$2"}$3}
JSON
}
# forged CKPT FIELD VALUE - a copy of CKPT with the float FIELD set to VALUE, CRC fixed.
forged() {
    cp "$1" "$TMP/forged.ckpt"
    $PATCH "$TMP/forged.ckpt" "$2" "$3" || fail "ckpt_patch $2 $3"
}

# 1. AdamW, one process.
spec "$TMP/aw.json" aw ', "optimizer": {"kind": "adamw", "lr": 0.001, "weight_decay": 0.05}'
$WORKER --spec "$TMP/aw.json" --stop-after-steps 10 >"$TMP/aw.log" 2>&1 || { cat "$TMP/aw.log"; fail "the AdamW run failed"; }
CK=$TMP/aw/aw.ckpt
[ -s "$CK" ] || fail "no checkpoint at $CK"
for c in "params[123] nan parameters: element 123 (conv1.weight\[123\]) is nan, want finite" \
    "momentum[7] inf AdamW first moment: element 7 (conv1.weight\[7\]) is inf, want finite" \
    "momentum[9] 1e30 AdamW first moment: element 9 (conv1.weight\[9\]) is 1e+30, want finite, of magnitude at most 1e+06 (a running sum of gradients)" \
    "moment2[5] -1 AdamW second moment: element 5 (conv1.weight\[5\]) is -1, want finite, >= 0 and at most 1e+12" \
    "moment2[6] 1e30 AdamW second moment: element 6 (conv1.weight\[6\]) is 1e+30, want finite, >= 0 and at most 1e+12 (a mean of squared gradients)" \
    "moment2[61000] nan AdamW second moment: element 61000 (fc3.weight\[.*\]) is nan, want finite, >= 0 and at most 1e+12"; do
    set -- $c
    field=$1 value=$2
    shift 2
    forged "$CK" "$field" "$value"
    expect_error 2 "forged.ckpt: checkpoint's $*" $WORKER --spec "$TMP/aw.json" --resume-from "$TMP/forged.ckpt"
done
$WORKER --spec "$TMP/aw.json" --resume-from "$CK" --stop-after-steps 12 >"$TMP/aw2.log" 2>&1 ||
    { cat "$TMP/aw2.log"; fail "the unforged AdamW checkpoint did not resume"; }
grep -q "resumed from .* at step 10" "$TMP/aw2.log" || { cat "$TMP/aw2.log"; fail "did not resume at step 10"; }
echo "ok: the unforged AdamW checkpoint resumes at step 10"

# 1b. SGD at momentum 0.9: a momentum buffer of 1e30 (which used to resume silently, health
# "ok") is refused as AdamW's first moment is.
spec "$TMP/sg.json" sg ', "optimizer": {"kind": "sgd", "lr": 0.02, "momentum": 0.9}'
$WORKER --spec "$TMP/sg.json" --stop-after-steps 10 >"$TMP/sg.log" 2>&1 || { cat "$TMP/sg.log"; fail "the SGD run failed"; }
forged "$TMP/sg/sg.ckpt" "momentum[7]" 1e30
expect_error 2 "forged.ckpt: checkpoint's momentum: element 7 (conv1.weight\[7\]) is 1e+30, want finite, of magnitude at most 1e+06 (a running sum of gradients)" \
    $WORKER --spec "$TMP/sg.json" --resume-from "$TMP/forged.ckpt"
echo "ok: SGD momentum of 1e30 refused by name"

# 2. PowerSGD's state, 2 ranks: every rank reads the file and refuses it.
spec "$TMP/ps.json" ps ', "workers": 2, "algorithm": {"name": "ssgd", "compression": {"kind": "powersgd", "rank": 2}}'
mpi 2 "$TMP/ps.log" --spec "$TMP/ps.json" --stop-after-steps 10
CK=$TMP/ps/ps.ckpt
equals_num "the step-10 checkpoint's compress_ranks" "$($PATCH "$CK" compress_ranks)" 2
forged "$CK" "compress_err[5]" 1e30
expect_error 2 "forged.ckpt: checkpoint's PowerSGD error feedback of rank 0: element 5 is 1e+30, want finite, of magnitude at most 1e+06" \
    $MPIRUN -np 2 $WORKER --spec "$TMP/ps.json" --resume-from "$TMP/forged.ckpt"
[ "$(grep -c "element 5 is 1e+30" "$TMP/out")" -eq 2 ] || { cat "$TMP/out"; fail "not every rank refused the PowerSGD error of 1e30"; }
forged "$CK" "compress_q[0]" nan
expect_error 2 "forged.ckpt: checkpoint's PowerSGD Q: element 0 is nan" \
    $MPIRUN -np 2 $WORKER --spec "$TMP/ps.json" --resume-from "$TMP/forged.ckpt"
mpi 2 "$TMP/ps2.log" --spec "$TMP/ps.json" --resume-from "$CK" --stop-after-steps 12
grep -q "resumed from .* at step 10" "$TMP/ps2.log" || { cat "$TMP/ps2.log"; fail "PowerSGD did not resume at step 10"; }
echo "ok: the unforged PowerSGD checkpoint resumes at step 10 on 2 ranks"
