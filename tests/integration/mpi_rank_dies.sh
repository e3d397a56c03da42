# A rank that dies mid-job (kill -9) makes the whole job exit non-zero, with no hang:
# mpirun notices the lost process and tears the others down. Checked for ssgd (issue 3)
# and for a worker of the parameter-server family, asgd (issue 4). The limit is what a
# user would call a hang, 60 s (it takes about 1 s: mpirun reacts to the lost process at
# once; a loaded machine only delays the teardown, a hang never ends).
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
run_and_kill() { # ALGORITHM NP
cat > "$TMP/spec.json" <<JSON
{"name": "die", "model": "lenet5", "algorithm": {"name": "$1"}, "workers": 3, "batch_size": 32,
 "epochs": 50, "log_every": 10, "dataset": {"name": "fashion-mnist", "train_subset": 4800, "test_subset": 200}}
JSON
$MPIRUN_RAW -np $2 $WORKER --spec "$TMP/spec.json" >"$TMP/log" 2>&1 &
mpipid=$!
# Wait (bounded) until training is under way, then kill one worker rank.
i=0
until grep -q "step\|update" "$TMP/log" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 1200 ] && { kill $mpipid; cat "$TMP/log"; fail "training never started (120 s)"; }
    sleep 0.1
done
victim=$(pgrep -f "pacer-worker --spec $TMP/spec.json" | tail -1)
[ -n "$victim" ] || fail "no worker process found"
start=$(date +%s.%N)
kill -9 "$victim"
i=0
while kill -0 $mpipid 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 600 ]; then kill -9 $mpipid; pkill -9 -f "$TMP/spec.json"; fail "job still running 60 s after a rank died: a hang"; fi
    sleep 0.1
done
wait $mpipid
status=$?
took=$(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN{print a-b}')
[ $status -ne 0 ] || fail "job exited 0 after a rank was killed"
at_most "seconds from the kill to the job's exit" "$took" 60
echo "ok: $1 job exited $status ${took}s after process $victim was killed"
# mpirun may exit while the ranks it killed are still being torn down (CI saw three of
# them in /proc at the instant it exited): a rank left behind is one still there after 10
# s, when a leaked one would still be training its 50 epochs.
i=0
while left=$(pgrep -f "$TMP/spec.json"); do
    i=$((i + 1)); [ $i -gt 100 ] && fail "ranks left running 10 s after the job exited: $(echo $left)"
    sleep 0.1
done
return 0
}
run_and_kill ssgd 3
run_and_kill asgd 4
