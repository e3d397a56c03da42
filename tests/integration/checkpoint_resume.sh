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

# Retention (issue 15): keep_last 2 and keep_best on a 3-epoch job (8 steps an epoch, a
# checkpoint every 5 steps and at each epoch end, after its evaluation). Exactly NAME.ckpt,
# the two newest linked names and the best evaluated one remain (lr and seed chosen so that
# the best is epoch 2's, older than the two newest); its name carries the logged accuracy. Then the latest is corrupted in place: --resume says so,
# falls back to the older one it kept, and ends bit for bit where the whole run ended.
cat >"$TMP/r.json" <<JSON
{"name": "r", "model": "mlp", "dataset": {"name": "fashion-mnist", "train_subset": 512, "test_subset": 300},
 "optimizer": {"lr": 0.2, "momentum": 0.9}, "batch_size": 64, "epochs": 3, "seed": 3, "log_every": 0,
 "checkpoint": {"every_steps": 5, "dir": "$TMP/r", "keep_last": 2, "keep_best": true}}
JSON
$WORKER --spec "$TMP/r.json" >/dev/null 2>"$TMP/r.log" || { cat "$TMP/r.log"; fail "retention run failed"; }
# The epoch-end steps 8, 16, 24 and their accuracies; the best (ties: the later step).
best=$(sed -n 's|^epoch \([0-9]*\)/3 done: .*test_accuracy \([0-9.]*\)$|\2 \1|p' "$TMP/r.log" \
    | awk '{ if ($1 >= b) { b = $1; e = $2 } } END { printf "%d %.4f", e * 8, b }')
bstep=${best% *} bacc=${best#* }
[ "$bstep" = 16 ] || { cat "$TMP/r.log"; fail "the best epoch end is step '$bstep', not 16: the test no longer keeps an older best"; }
bfile=$(cd "$TMP/r" && ls r.step$bstep-epoch$((bstep / 8))-acc*.ckpt 2>/dev/null)
[ -n "$bfile" ] || { ls "$TMP/r"; fail "the best checkpoint (step $bstep) was not kept"; }
got=$(awk -v a="${bfile##*-acc}" 'BEGIN { printf "%.4f", a / 1e6 }')
[ "$got" = "$bacc" ] || fail "the best checkpoint's name says accuracy $got, the log $bacc"
have=$(cd "$TMP/r" && ls | sed 's/-acc[0-9]*//' | tr '\n' ' ')
want="r.ckpt r.step16-epoch2.ckpt r.step20-epoch2.ckpt r.step24-epoch3.ckpt "
[ "$have" = "$want" ] || fail "kept '$have' (accuracies left out), want '$want'"
[ "$(stat -c %i "$TMP/r/r.ckpt")" = "$(stat -c %i "$TMP/r"/r.step24-*.ckpt)" ] || fail "r.ckpt is not the latest kept"
echo "ok: keep_last 2 + keep_best kept exactly: $have(best: step $bstep, accuracy $bacc)"

cp "$TMP/r/r.ckpt" "$TMP/r-final.ckpt"
printf '\377' | dd of="$TMP/r/r.ckpt" bs=1 seek=5000 conv=notrunc 2>/dev/null
$WORKER --spec "$TMP/r.json" --resume >/dev/null 2>"$TMP/r2.log" || { cat "$TMP/r2.log"; fail "resume with a corrupt latest failed"; }
grep -q "r.ckpt: checkpoint is corrupt .*; trying the older .*/r.step20-epoch2.ckpt" "$TMP/r2.log" \
    || { cat "$TMP/r2.log"; fail "the corrupt latest was not named, or no fallback to step 20"; }
grep -q "resumed from .*/r.step20-epoch2.ckpt at step 20" "$TMP/r2.log" || { cat "$TMP/r2.log"; fail "did not resume at step 20"; }
cmp -s "$TMP/r/r.ckpt" "$TMP/r-final.ckpt" || fail "resumed from the older checkpoint, the run ends elsewhere"
echo "ok: a corrupt latest checkpoint: --resume names it and resumes from the older one kept, ends bit for bit"
