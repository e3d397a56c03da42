# pacer-sched-sim --experiment: one search's trials on an unequal cluster in virtual time.
# ASHA stops trials at their rungs by the daemon's own rule (common/search.c) and the
# trials that go on are worth rf^rung to hetero's placement. Deterministic: two runs print
# the same bytes. On bench/sched/cluster_exp.json (2 fast, 2 half, 4 quarter slots) the
# 32-trial ASHA search of bench/sched/asha32.json ends sooner under hetero, which moves the
# promoted trials onto the fast slots, than under agnostic, which leaves them where they
# started (virtual seconds, so an exact comparison); a random search stops nothing. A PBT
# search (bench/sched/pbt8.json) stops nothing either: its bottom trials take over better
# trials' weights at the points (each exploit a new job, queued again) and so train fewer
# epochs themselves and end with a higher mean than the same trials as a random search.
# Every refusal of the experiment file names the file and the field.
. tests/lib.sh
SIM=$BUILD/pacer-sched-sim
[ -x "$SIM" ] || fail "$SIM not built (make $SIM)"
CL=bench/sched/cluster_exp.json
EXP=bench/sched/asha32.json
OPTS="--round-s 30 --min-run-s 60 --restart-cost-s 10"

for p in agnostic hetero; do
    for i in 1 2; do
        "$SIM" --cluster $CL --experiment $EXP --policy $p $OPTS --jobs-out "$TMP/$p-$i.jobs" >"$TMP/$p-$i.out" ||
            fail "$p: exit $?"
    done
    cmp "$TMP/$p-1.out" "$TMP/$p-2.out" || fail "$p: two runs printed different summaries"
    [ "$(json "$TMP/$p-1.out" .experiment.trials)" = 32 ] || fail "$p: not 32 trials"
    [ "$(wc -l <"$TMP/$p-1.jobs")" = 32 ] || fail "$p: the per-job file has not 32 lines"
    stopped=$(json "$TMP/$p-1.out" .experiment.stopped) full=$(json "$TMP/$p-1.out" .experiment.trained_to_end)
    [ "$stopped" -ge 16 ] && [ "$full" -ge 1 ] && [ $((stopped + full)) = 32 ] ||
        fail "$p: $stopped stopped and $full trained to the end of 32 (rf 3 stops most at their first rung)"
    need_number "$p best" "$(json "$TMP/$p-1.out" .experiment.best.metric)"
    echo "ok: $p: search ends at $(json "$TMP/$p-1.out" .makespan_s) s, $stopped trials stopped, $full to the end"
done
a=$(json "$TMP/agnostic-1.out" .makespan_s) h=$(json "$TMP/hetero-1.out" .makespan_s)
awk -v a="$a" -v h="$h" 'BEGIN { exit !(h < a) }' || fail "hetero's search ($h s) does not end before agnostic's ($a s)"
[ "$(json "$TMP/agnostic-1.out" .resizes)" = 0 ] || fail "agnostic moved a trial"
[ "$(json "$TMP/hetero-1.out" .resizes)" -ge 1 ] || fail "hetero moved no trial"
echo "ok: hetero ends the search at $h s, agnostic at $a s"

# the trials' worth matters to hetero's moves: without it, other moves and another end
"$SIM" --cluster $CL --experiment $EXP --policy hetero $OPTS --trial-worth none >"$TMP/none.out" || fail "none: exit $?"
cmp -s "$TMP/none.out" "$TMP/hetero-1.out" && fail "--trial-worth none changed nothing"
echo "ok: without worths hetero ends at $(json "$TMP/none.out" .makespan_s) s"

# random: every trial trains every epoch
jq '.search.method = "random"' $EXP >"$TMP/random.json"
"$SIM" --cluster $CL --experiment "$TMP/random.json" --policy agnostic $OPTS >"$TMP/random.out" || fail "random: exit $?"
[ "$(json "$TMP/random.out" .experiment.stopped)" = 0 ] &&
    [ "$(json "$TMP/random.out" .experiment.epochs_trained)" = $((32 * 27)) ] ||
    fail "random: trials stopped or epochs missing: $(cat "$TMP/random.out")"
echo "ok: random trains 32 x 27 epochs"

# pbt: the same curves as a random search of the same seed, the bottom trials moved onto the top ones' weights
PBT=bench/sched/pbt8.json
for i in 1 2; do
    "$SIM" --cluster $CL --experiment $PBT --policy hetero $OPTS --jobs-out "$TMP/pbt-$i.jobs" >"$TMP/pbt-$i.out" ||
        fail "pbt: exit $?"
done
cmp "$TMP/pbt-1.out" "$TMP/pbt-2.out" || fail "pbt: two runs printed different summaries"
jq '.search.method = "random" | del(.search.perturbation_interval, .search.quantile)' $PBT >"$TMP/pbt-random.json"
"$SIM" --cluster $CL --experiment "$TMP/pbt-random.json" --policy hetero $OPTS >"$TMP/pbt-random.out" ||
    fail "pbt's random: exit $?"
jq -e '.experiment | .method == "pbt" and .trials == 8 and .stopped == 0 and .trained_to_end == 8 and .exploits >= 1
    and .epochs_trained < 8 * 27' "$TMP/pbt-1.out" >/dev/null ||
    fail "pbt: want 8 trials to the end, none stopped, an exploit, fewer than 8 x 27 epochs: $(cat "$TMP/pbt-1.out")"
jq -e --slurpfile r "$TMP/pbt-random.out" '.experiment.mean_metric > $r[0].experiment.mean_metric
    and .experiment.best.metric >= $r[0].experiment.best.metric' "$TMP/pbt-1.out" >/dev/null ||
    fail "pbt: its mean (or best) is not above the random search's: $(cat "$TMP/pbt-1.out" "$TMP/pbt-random.out")"
# an exploit is a new job: the trial leaves its slots and is placed again before its end
jq -se 'map(select(.allocations[:-1] | any(.slots == {}))) | length >= 1' "$TMP/pbt-1.jobs" >/dev/null ||
    fail "pbt: no trial went back to the queue for an exploit"
echo "ok: pbt: $(jq .experiment.exploits "$TMP/pbt-1.out") exploits, $(jq .experiment.epochs_trained "$TMP/pbt-1.out") epochs trained of 216, mean $(jq .experiment.mean_metric "$TMP/pbt-1.out") against random's $(jq .experiment.mean_metric "$TMP/pbt-random.out")"

# refusals
e() { printf '%s\n' "$1" >"$TMP/e.json"; }
run() { "$SIM" --cluster $CL --experiment "$TMP/e.json" --policy hetero; }
S='"search": {"method": "asha", "trials": 4, "space": {"optimizer.lr": {"uniform": [0.1, 0.2]}}}'
e '{"type": "lenet5", "epoch_samples": 100, "epochs": 9,'
expect_error 1 "e.json:2: not JSON" run
e '[1]'
expect_error 1 "e.json: must be a JSON object" run
e "{\"type\": \"resnet\", \"epoch_samples\": 100, \"epochs\": 9, $S}"
expect_error 1 "e.json: type: must be a job type of the cluster file's speeds" run
e "{\"type\": \"lenet5\", \"epochs\": 9, $S}"
expect_error 1 "e.json: epoch_samples: must be a number in \[1, 1e12\]" run
e "{\"type\": \"lenet5\", \"epoch_samples\": 100, \"epochs\": 1e9, $S}"
expect_error 1 "e.json: epochs: must be an integer in 1..10000" run
e "{\"type\": \"lenet5\", \"workers\": 9, \"epoch_samples\": 100, \"epochs\": 9, $S}"
expect_error 1 "e.json: workers: must be an integer in 1..8" run
e "{\"type\": \"lenet5\", \"epoch_samples\": 100, \"epochs\": 9, \"trails\": 3, $S}"
expect_error 1 "e.json: trails: unknown field" run
e "{\"type\": \"lenet5\", \"epoch_samples\": 100, \"epochs\": 9, $(echo "$S" | sed 's/"asha"/"pbt"/; s/optimizer.lr/batch_size/')}"
expect_error 1 "e.json: search.space.batch_size: a pbt search may search only optimizer fields" run
e '{"type": "lenet5", "epoch_samples": 100, "epochs": 9}'
expect_error 1 "e.json: search: must be an object" run
expect_error 2 "one of --trace and --experiment" "$SIM" --cluster $CL --experiment $EXP --trace x --policy hetero
expect_error 2 "--trial-worth: must be rung or none" "$SIM" --cluster $CL --experiment $EXP --policy hetero --trial-worth 2
echo "PASS"
