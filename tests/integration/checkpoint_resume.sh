# Determinism and checkpoints (issue 2):
# - the same spec and seed give bitwise identical weights;
# - a run stopped at step 40 and resumed ends with the same bytes as an uninterrupted run;
# - a corrupt, truncated, foreign or mismatched checkpoint is refused with exit 2 and a
#   line that names the problem.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
spec() { # spec NAME DIR [MODEL]
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "${3:-lenet5}", "dataset": {"name": "fashion-mnist", "train_subset": 2048, "test_subset": 500},
 "optimizer": {"lr": 0.02, "momentum": 0.9, "weight_decay": 0.0005, "lr_schedule": {"kind": "cosine", "warmup_epochs": 0.5}},
 "batch_size": 64, "epochs": 2, "seed": 7, "log_every": 0, "checkpoint": {"every_steps": 10, "dir": "$2"}}
JSON
}
spec a "$TMP/a"; spec b "$TMP/b"; spec c "$TMP/c"
$WORKER --spec "$TMP/a.json" >/dev/null 2>&1 || fail "run a failed"
$WORKER --spec "$TMP/c.json" >/dev/null 2>&1 || fail "run c failed"
# Names differ (a vs c), so compare everything after the header's job-independent part:
# the checkpoints hold the model name, not the job name, so the files must be identical.
cmp "$TMP/a/a.ckpt" "$TMP/c/c.ckpt" || fail "two runs of the same spec differ"
echo "ok: same spec and seed -> identical checkpoints"

$WORKER --spec "$TMP/b.json" --stop-after-steps 40 >/dev/null 2>&1 || fail "interrupted run failed"
$WORKER --spec "$TMP/b.json" --resume 2>"$TMP/resume.log" >/dev/null || { cat "$TMP/resume.log"; fail "resume failed"; }
grep -q "resumed from .* at step 40" "$TMP/resume.log" || { cat "$TMP/resume.log"; fail "did not resume at step 40"; }
cmp "$TMP/a/a.ckpt" "$TMP/b/b.ckpt" || fail "resumed run differs from the uninterrupted one"
echo "ok: stop at step 40 + --resume == uninterrupted run, bit for bit"

ck="$TMP/a/a.ckpt"
cp "$ck" "$TMP/corrupt.ckpt"
printf '\377' | dd of="$TMP/corrupt.ckpt" bs=1 seek=5000 conv=notrunc 2>/dev/null
expect_error 2 "corrupt" $WORKER --spec "$TMP/a.json" --resume-from "$TMP/corrupt.ckpt"
head -c 3000 "$ck" > "$TMP/trunc.ckpt"
expect_error 2 "truncated" $WORKER --spec "$TMP/a.json" --resume-from "$TMP/trunc.ckpt"
echo "hello" > "$TMP/foreign.ckpt"
expect_error 2 "not a pacer checkpoint" $WORKER --spec "$TMP/a.json" --resume-from "$TMP/foreign.ckpt"
expect_error 2 "cannot open checkpoint" $WORKER --spec "$TMP/a.json" --resume-from "$TMP/missing.ckpt"
spec m "$TMP/m" mlp
expect_error 2 "checkpoint is for model lenet5" $WORKER --spec "$TMP/m.json" --resume-from "$ck"
