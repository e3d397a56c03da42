# The numeric helpers of tests/lib.sh themselves: each passes on numbers that satisfy it
# and fails on numbers that do not AND on every non-number (a missing summary field reads
# as "null" from jq, a diverged run as "nan" or "inf"), so no accuracy check can pass on
# a value that is not there. Each check runs in a subshell because fail() exits.
. tests/lib.sh
passes() { ( "$@" ) >"$TMP/out" 2>&1 || { cat "$TMP/out"; echo "FAIL: '$*' failed, want pass"; exit 1; }; }
fails() {
    if ( "$@" ) >"$TMP/out" 2>&1; then cat "$TMP/out"; echo "FAIL: '$*' passed, want fail"; exit 1; fi
    grep -q '^FAIL: ' "$TMP/out" || { cat "$TMP/out"; echo "FAIL: '$*' failed without a FAIL line"; exit 1; }
}
for v in 0 1 -2 0.5 .5 3. 1e-4 -2.5E+3 +7; do
    passes is_number "$v"
done
for v in null nan NaN -nan inf -inf Infinity "" " " "1 2" abc 0x10 1e 1.2.3 "--1" "0.5 "; do
    if is_number "$v"; then echo "FAIL: is_number accepted '$v'"; exit 1; fi
done
echo "ok: is_number accepts decimals and refuses null, nan, inf, empty and text"

passes at_least acc 0.9 0.85
passes at_least acc 0.85 0.85
passes at_least big 1e3 999
fails at_least acc 0.84 0.85
passes at_most r 1.1 1.2
fails at_most r 1.3 1.2
passes between x 2 1 3
fails between x 4 1 3
fails between x 0 1 3
passes equals_num n 1.0 1
fails equals_num n 1.5 1
passes ratio_at_least r 3 1 3
fails ratio_at_least r 2.9 1 3
fails ratio_at_least r 3 0 1
for bad in null nan NaN inf -inf "" abc; do
    fails at_least acc "$bad" 0.85
    fails at_least acc 0.9 "$bad"
    fails at_most r "$bad" 1.2
    fails between x "$bad" 0 1
    fails equals_num n "$bad" 1
    fails ratio_at_least r "$bad" 1 1
    fails ratio_at_least r 1 "$bad" 1
    fails need_number v "$bad"
done
echo "ok: at_least, at_most, between, equals_num, ratio_at_least fail on null, nan, inf, empty and text"

# tests/tools/mpirun.sh ($MPIRUN): a stand-in mpirun first on PATH. Open MPI's finalize race
# message ("with PID 0 ... exiting improperly", or "... with PID 0 ... exited on signal 15")
# makes it run the job once more; any other
# failure, the same message with a real PID included, comes back unchanged and once.
mkdir -p "$TMP/bin"
cat >"$TMP/bin/mpirun" <<'SH'
#!/bin/sh
n=$(cat "$FAKE_COUNT" 2>/dev/null || echo 0); n=$((n + 1)); echo $n >"$FAKE_COUNT"
echo "rank output $n"
case "$FAKE_MODE:$n" in
race:1) printf 'mpirun has exited due to process rank 3 with PID 0 on\nnode vm exiting improperly. There are three reasons\n' >&2; exit 1 ;;
race:*) exit 0 ;;
race15:1) printf 'Primary job  terminated normally, but 1 process returned\na non-zero exit code.\nmpirun noticed that process rank 1 with PID 0 on node vm exited on signal 15 (Terminated).\n' >&2; exit 1 ;;
race15:*) exit 0 ;;
real:*) printf 'mpirun has exited due to process rank 3 with PID 4242 on\nnode vm exiting improperly. There are three reasons\n' >&2; exit 1 ;;
fail:*) echo "pacer-worker: bad spec" >&2; exit 2 ;;
esac
SH
chmod +x "$TMP/bin/mpirun"
fake() { # MODE -> exit status; output in $TMP/fake.out, runs in $FAKE_COUNT
    FAKE_COUNT=$TMP/count.$1; rm -f "$FAKE_COUNT"
    PATH=$TMP/bin:$PATH FAKE_MODE=$1 FAKE_COUNT=$FAKE_COUNT $MPIRUN -np 2 true >"$TMP/fake.out" 2>&1
}
fake race || { cat "$TMP/fake.out"; fail "mpirun.sh did not run the job again after Open MPI's finalize race"; }
[ "$(cat "$TMP/count.race")" = 2 ] || fail "mpirun.sh ran the job $(cat "$TMP/count.race") times after the race, want 2"
grep -q 'running the job once more' "$TMP/fake.out" || fail "mpirun.sh did not say it ran the job again"
fake race15 || { cat "$TMP/fake.out"; fail "mpirun.sh did not run the job again after the race's signal-15 form"; }
[ "$(cat "$TMP/count.race15")" = 2 ] || fail "mpirun.sh ran the job $(cat "$TMP/count.race15") times after the signal-15 form, want 2"
fake real; [ $? = 1 ] || fail "a rank with a real PID exiting improperly must fail"
[ "$(cat "$TMP/count.real")" = 1 ] || fail "mpirun.sh ran a real improper exit again"
fake fail; [ $? = 2 ] || fail "mpirun.sh changed the exit status of a failed job"
[ "$(cat "$TMP/count.fail")" = 1 ] && grep -q 'bad spec' "$TMP/fake.out" || fail "a failed job's message or count changed"
echo "ok: \$MPIRUN runs a job again only after Open MPI's finalize race, and keeps other failures"

# The accuracy-per-epoch checks (issue 29): a history or records that match the log pass;
# an extra point (the workers' final records of a parameter-server job, 0 where nothing
# was evaluated), a zero, a point of another rank, a missing epoch, a null, or a resumed
# run's superseded evaluation each fail.
printf '%s\n' "epoch 1/2 done: train_loss_running 1.1 test_loss 0.6 test_accuracy 0.8000" \
    "epoch 2/2 done: train_loss_running 0.9 test_loss 0.5 test_accuracy 0.8100" \
    "resumed from ck/x.ckpt at step 40 (epoch 2)" \
    "epoch 2/2 done: train_loss_running 0.9 test_loss 0.5 test_accuracy 0.8500" >"$TMP/acc.log"
hist() { echo "{\"accuracy\": [$1]}" >"$TMP/hist.json"; history_accuracy_is_log "$TMP/hist.json" test "$TMP/acc.log"; }
p1='{"epoch": 1, "test_accuracy": 0.80004, "rank": 0}' p2='{"epoch": 2, "test_accuracy": 0.85, "rank": 0}'
passes hist "$p1, $p2"
fails hist "$p1, {\"epoch\": 1, \"test_accuracy\": 0, \"rank\": 1}, $p2"
fails hist "$p1, {\"epoch\": 2, \"test_accuracy\": 0, \"rank\": 0}"
fails hist "$p1, {\"epoch\": 2, \"test_accuracy\": 0.85, \"rank\": 2}"
fails hist "$p2"
fails hist "$p1, {\"epoch\": 2, \"test_accuracy\": null, \"rank\": 0}"
fails hist "$p1, {\"epoch\": 2, \"test_accuracy\": 0.81, \"rank\": 0}"
fails hist ""
recs() { printf '%s\n' "$@" >"$TMP/recs.jsonl"; records_match_log "$TMP/recs.jsonl" test "$TMP/acc.log"; }
e1='{"kind": "epoch", "rank": 0, "epoch": 1, "test_accuracy": 0.8}'
e2='{"kind": "epoch", "rank": 0, "epoch": 2, "test_accuracy": 0.81}'
e3='{"kind": "epoch", "rank": 0, "epoch": 2, "test_accuracy": 0.85}'
passes recs "$e1" "$e2" '{"kind": "final", "rank": 1, "epoch": 1, "test_accuracy": null}' "$e3"
fails recs "$e1" "$e2" '{"kind": "final", "rank": 1, "epoch": 1, "test_accuracy": 0}' "$e3"
fails recs "$e1" "$e2" '{"kind": "epoch", "rank": 1, "epoch": 2, "test_accuracy": 0.81}' "$e3"
fails recs "$e1" "$e2" '{"kind": "final", "rank": 0, "epoch": 2, "test_accuracy": 0.85}' "$e3"
fails recs "$e1" "$e3"
echo "ok: the accuracy-per-epoch checks fail on an extra point, a zero, another rank's point, a gap, a null"
