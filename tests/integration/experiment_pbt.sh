# Population-based training (docs/EXPERIMENTS.md "PBT") against the real coordinator: 3
# LeNet-5 trials of 3 epochs on a Fashion-MNIST subset, 2 at a time, one of them with a
# learning rate too small to learn (seed 1 gives lr 0.05, 0.05, 0.0001). The third trial
# starts after a good one has recorded its first epochs, so at its first perturbation point
# it is at the bottom and exploits: its job is cancelled, and it goes on as a new job that
# resumes from the better trial's checkpoint (its log: "adopting .../exploit.ckpt" and
# "resumed from ... at step S" with S that trial's step, never 0) with that trial's values
# perturbed (momentum x0.8 or x1.2, the lr choice moved or drawn again); the exploit is
# recorded on the trial and as an event, every trial ends with the spec's epochs, and the
# experiment SUCCEEDS. The coordinator is restarted once trial 0 has passed its first point:
# what it recorded (each trial's values at the points, its exploits) is kept, each trial runs
# one job per exploit plus one, and trial 2's exploit is the new coordinator's. The
# dashboard's page lists and marks every exploit (tests/browser/experiment.mjs) where
# chromium is installed. Bad PBT fields are refused naming the field.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

start_coord_admin

# body FILE SEARCH - an experiment of the small LeNet-5 job.
body() {
    jq -n --argjson s "$2" '{name: "pbt", spec: {model: "lenet5",
        dataset: {name: "fashion-mnist", train_subset: 1024, test_subset: 200}, optimizer: {lr: 0.05, momentum: 0.9},
        batch_size: 64, epochs: 3, seed: 7, log_every: 100, checkpoint: {every_steps: 4}}, search: $s}' >"$1"
}
xq() { curl -s -H "Authorization: Bearer $PACER_TOKEN" "$BASE/api/v1/experiments/$1" | jq -r "$2"; }

SPACE='{"optimizer.lr": {"choice": [0.05, 0.0001]}, "optimizer.momentum": {"uniform": [0.5, 0.9]}}'
body "$TMP/bad.json" "{\"method\": \"pbt\", \"trials\": 3, \"quantile\": 0.7, \"space\": $SPACE}"
refused 400 "search.quantile: must be a number in (0, 0.5] (the bottom fraction that exploits)" "$ADMIN" POST /api/v1/experiments -H "$JSON" -d @"$TMP/bad.json"
body "$TMP/bad.json" "{\"method\": \"pbt\", \"trials\": 3, \"perturbation_interval\": 3, \"space\": $SPACE}"
refused 400 "search.perturbation_interval: 3 leaves no perturbation point before the last of the spec's 3 epochs" \
    "$ADMIN" POST /api/v1/experiments -H "$JSON" -d @"$TMP/bad.json"
body "$TMP/bad.json" '{"method": "pbt", "trials": 3, "space": {"batch_size": {"choice": [32, 64]}}}'
refused 400 "search.space.batch_size: a pbt search may search only optimizer fields but optimizer.kind (a trial goes \
on from another trial's checkpoint, which must fit its model and batches)" "$ADMIN" POST /api/v1/experiments \
    -H "$JSON" -d @"$TMP/bad.json"
echo "ok: a quantile past 0.5, an interval with no point, a non-optimizer field: refused naming the field"

body "$TMP/pbt.json" "{\"method\": \"pbt\", \"trials\": 3, \"max_concurrent\": 2, \"seed\": 1, \"space\": $SPACE}"
ok 201 "$ADMIN" POST /api/v1/experiments -H "$JSON" -d @"$TMP/pbt.json"
X=$(jq -r .id "$TMP/body")
jq -e '.search.perturbation_interval == 1 and .search.quantile == 0.25 and .rungs == [1, 2]
    and ([.trials[].params["optimizer.lr"]] == [0.05, 0.05, 0.0001]) and .trials[0].exploits == []' "$TMP/body" \
    >/dev/null || { cat "$TMP/body"; fail "the new PBT experiment: want points [1, 2], seed 1's lrs, no exploits"; }

# ---- a coordinator restart between two perturbation points ----------------------------------------------------
# Once trial 0 has its value at the first point (epoch 1 of 3) the coordinator stops (Redis and the trials' workers
# go on). Trial 2 waits for a trial to end, so it has not reached a point yet: its exploit is the new
# coordinator's, against the values the old one recorded.
trial_rec() { rcli HGET "pacer:experiment:$X" "trial:$1"; }
point_recorded() { trial_rec 0 | jq -e '.rungs | length >= 1'; }
await 120 "experiment $X's trial 0 at its first perturbation point" point_recorded
# read before the stop: the embedded Redis stops with its coordinator (and starts again with the next), and what
# the old one recorded after this is only more
for t in 0 1 2; do trial_rec "$t" | sed '/^$/d' >"$TMP/before-$t.json"; done # a trial not started has no record
[ -s "$TMP/before-0.json" ] || fail "experiment $X: trial 0's record could not be read before the restart"
stop_coord
restart_at=$(now)
jq -e '.exploits // [] | length == 0' "$TMP/before-2.json" >/dev/null ||
    fail "experiment $X: trial 2 exploited before the restart (the test wants it after): $(cat "$TMP/before-2.json")"
start_coord
BASE=$(api_base)
is_x_state() { [ "$(xq "$X" .state)" = "$1" ]; }
await 180 "experiment $X to succeed after the restart" is_x_state SUCCEEDED
xq "$X" . >"$TMP/x.json"
# nothing the old coordinator recorded is lost or redone: each trial's values at the points and its exploits then
# begin its values and exploits now, and each trial ran one job per exploit plus one (its jobs are NAME-tI)
curl -s -H "Authorization: Bearer $PACER_TOKEN" "$BASE/api/v1/jobs?limit=200" |
    jq -r '.jobs[].name | select(startswith("pbt-t"))' | sort | uniq -c >"$TMP/jobs"
for t in 0 1 2; do
    [ -s "$TMP/before-$t.json" ] || continue # not stored before the restart: nothing to keep
    jq -e --slurpfile b "$TMP/before-$t.json" --argjson t "$t" '.trials[$t] | ($b[0].rungs | length) as $n
        | ($b[0].exploits // [] | length) as $m
        | .rung_metrics[:$n] == $b[0].rungs and .exploits[:$m] == ($b[0].exploits // [])' "$TMP/x.json" >/dev/null ||
        fail "experiment $X: trial $t's points or exploits from before the restart changed: $(cat "$TMP/before-$t.json")"
    want=$(jq --argjson t "$t" '.trials[$t].exploits | length + 1' "$TMP/x.json")
    grep -qx " *$want pbt-t$t" "$TMP/jobs" || { cat "$TMP/jobs"; fail "trial $t of $X: want $want jobs (its exploits + 1)"; }
done
rcli XRANGE pacer:events - + | grep "\"experiment\":\"$X\"" | grep '"action":"exploited"' |
    sed 's/^[^{]*//' | jq -se --argjson r "$restart_at" 'map(select(.trial == 2 and .time > $r)) | length >= 1' \
    >/dev/null || fail "experiment $X: trial 2 did not exploit after the coordinator's restart at $restart_at"
echo "ok: a coordinator restart between two points of $X: every trial's points and exploits kept, one job per exploit plus one, trial 2's exploit made by the new coordinator"
jq -e '[.trials[] | select(.state != "SUCCEEDED" or .epochs_trained != 3)] | length == 0' "$TMP/x.json" >/dev/null ||
    { cat "$TMP/x.json"; fail "experiment $X: a trial did not succeed with 3 epochs"; }
jq -e '.trials[2].exploits | length >= 1' "$TMP/x.json" >/dev/null ||
    { cat "$TMP/x.json"; grep "experiment $X" "$TMP/coord.log"; fail "experiment $X: trial 2 (lr 0.0001) never exploited"; }

# every exploit: a better trial's values perturbed, its checkpoint resumed by the trial's next job (the
# next exploit's job, or the trial's job after its last)
n=0
for row in $(jq -c '.trials[] | .trial as $t | .job as $last | ([.exploits[].job] + [$last]) as $jobs
        | .exploits | to_entries[] | {t: $t, e: .value, next: $jobs[.key + 1]}' "$TMP/x.json"); do
    n=$((n + 1))
    t=$(echo "$row" | jq .t)
    from=$(echo "$row" | jq .e.from)
    old=$(echo "$row" | jq -r .e.job)
    next=$(echo "$row" | jq -r .next)
    echo "$row" | jq -e '.e.from_metric > .e.metric' >/dev/null || fail "exploit $row: the donor was not better"
    # the donor's values then: those it was given or one of its own exploits' (x0.8, x1.2, or clipped)
    jq -e --argjson d "$from" --argjson m "$(echo "$row" | jq '.e.params["optimizer.momentum"]')" \
        '[.trials[$d] | .params, .exploits[].params | .["optimizer.momentum"] | . * 0.8, . * 1.2, 0.5, 0.9]
        | map(. - $m | fabs) | min < 1e-5' "$TMP/x.json" >/dev/null ||
        fail "exploit $row: momentum is not trial $from's x0.8 or x1.2 (clipped)"
    echo "$row" | jq -e '.e.params["optimizer.lr"] | IN(0.05, 0.0001)' >/dev/null || fail "exploit $row: lr not a choice"
    # cancelled, or finished when its last epoch ended before the cancel reached it
    old_ended() { q "$old" .state | grep -qx 'CANCELLED\|SUCCEEDED'; }
    await 60 "exploit $row: the trial's old job $old to end" old_ended
    [ "$(rcli HGET "pacer:job:$next" adopt_from)" = "$old" ] || fail "exploit $row: job $next does not go on from $old"
    grep -q "adopting $STATE/jobs/$old/exploit.ckpt" "$STATE/jobs/$next/log" ||
        { cat "$STATE/jobs/$next/log"; fail "exploit $row: job $next did not adopt $old's exploit.ckpt"; }
    step=$(resumed_step "$next")
    [ "${step:-0}" -ge 16 ] || fail "exploit $row: job $next resumed at step '${step}', want the donor's (>= 16)"
    [ "$(rcli HGET "pacer:job:$next" trial)" = "$t" ] || fail "job $next is not trial $t's"
    echo "ok: trial $t exploited trial $from at epoch $(echo "$row" | jq .e.epoch): job $old cancelled, job $next resumed from its checkpoint at step $step with $(echo "$row" | jq -c .e.params)"
done
[ "$n" -ge 1 ] || fail "no exploit"
rcli XRANGE pacer:events - + | grep "\"experiment\":\"$X\"" | grep -c '"action":"exploited"' | grep -qx "$n" ||
    fail "experiment $X: the exploited events are not one per exploit ($n)"
jq -e '.best.metric != null' "$TMP/x.json" >/dev/null || fail "experiment $X: no best"
echo "ok: PBT experiment $X SUCCEEDED: $n exploit(s), each a cancelled job and a new one resuming the better trial's checkpoint with perturbed values"
PACER=$BUILD/pacer
if [ -x "$PACER" ]; then
    "$PACER" --url "$BASE" experiment get "$X" >"$TMP/get.txt" || fail "pacer experiment get $X"
    [ "$(grep -c '^trial [0-2] exploited trial [0-2] at epoch [12] (job j-[0-9]* stopped' "$TMP/get.txt")" = "$n" ] ||
        { cat "$TMP/get.txt"; fail "pacer experiment get $X: not one line per exploit"; }
    echo "ok: pacer experiment get lists the $n exploit(s)"
fi
# the dashboard's experiment page marks the exploits (static/experiments.js), in a real browser where there is one
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ] && command -v node >/dev/null && [ -d tests/browser/node_modules/playwright-core ]; then
    CHROMIUM=$CHROMIUM timeout 120 node tests/browser/experiment.mjs "$BASE" "$ADMIN" "$X" "$BUILD/experiment_pbt.png" ||
        fail "the dashboard's page of PBT experiment $X"
    echo "ok: the dashboard's page of $X lists and marks its $n exploit(s) ($BUILD/experiment_pbt.png)"
else
    echo "ok (the dashboard's exploit marks not checked: they need chromium, node and tests/browser's playwright-core)"
fi
# what Redis holds is outside input: a trial whose exploit parts are damaged is named, never used
rcli HSET "pacer:experiment:$X" trial:1 \
    '{"job":null,"state":"PENDING","epochs":0,"rungs":[],"cursor":"0","prev":"../../etc","exploits":[1]}' >/dev/null
refused 500 "experiment $X: trial:1 is damaged" "$ADMIN" GET "/api/v1/experiments/$X"
echo "ok: a damaged PBT trial record is a 500 naming it"
