# Experiments (coordinator/experiment.c, docs/EXPERIMENTS.md) against the real
# coordinator: an ASHA search of 6 small LeNet-5 trials on a Fashion-MNIST subset (2 at a
# time, rungs at 1 and 3 of 6 epochs) whose learning rates are a good one and one too small
# to learn: ASHA stops some trials at their rung (their jobs cancelled, their slots freed at
# once) and promotes others, and every decision follows the rule, recomputed here from the
# events in their order; the coordinator is restarted in the middle of it and the search goes
# on from Redis, losing no trial and starting none twice. A viewer may not start an
# experiment (403), a member may not cancel another's (403) but cancels their own (every
# trial's job CANCELLED, then 409); bad searches are refused with the spec's own message;
# the CLI (pacer experiment submit|ls|get|cancel), the Python client's list, and the dashboard's
# Experiments pages in headless Chromium (tests/browser/experiment.mjs) where it is installed.
# Webhooks (tests/webhook_receiver.py): the admin's subscription hears experiment.succeeded
# (delivered by the restarted coordinator), experiment.cancelled and experiment.failed (an
# experiment whose one trial's job is cancelled before it evaluates), each once and signed;
# alice's (a member's) hears her own experiments' only.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
PACER=$BUILD/pacer
[ -x "$PACER" ] || skip "$PACER not built (libcurl missing: make deps)"

start_coord_admin --webhook-hosts 127.0.0.1
ALICE=$(adduser alice member) || exit 1
BOB=$(adduser bob member) || exit 1
CAROL=$(adduser carol viewer) || exit 1

python3 tests/webhook_receiver.py "$TMP/port" "$TMP/got.jsonl" &
EXTRA_PIDS="$EXTRA_PIDS $!"
await 20 "the webhook receiver to listen" test -s "$TMP/port"
SECRET=exp-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
for who in "$ADMIN admin" "$ALICE alice"; do
    ok 201 "${who% *}" POST /api/v1/webhooks -H "$JSON" -d "$(jq -nc --arg u "http://127.0.0.1:$(cat "$TMP/port")/${who#* }" \
        --arg s "$SECRET" '{url: $u, secret: $s, events: ["experiment.succeeded", "experiment.failed", "experiment.cancelled"]}')"
done

# body FILE NAME EPOCHS SEARCH - an experiment of the small LeNet-5 job.
body() {
    jq -n --arg n "$2" --argjson e "$3" --argjson s "$4" '{name: $n, spec: {model: "lenet5",
        dataset: {name: "fashion-mnist", train_subset: 1024, test_subset: 500}, optimizer: {lr: 0.02, momentum: 0.9},
        batch_size: 64, epochs: $e, seed: 7, log_every: 10, checkpoint: {every_steps: 8}}, search: $s}' >"$1"
}
# xq ID FILTER - jq -r FILTER over GET /api/v1/experiments/ID.
xq() { curl -s -H "Authorization: Bearer $PACER_TOKEN" "$BASE/api/v1/experiments/$1" | jq -r "$2"; }

# ---- refusals -----------------------------------------------------------------------------------------------
body "$TMP/bad.json" bad 4 '{"method": "random", "trials": 2, "space": {"optimizer.lrr": {"log_uniform": [0.001, 0.1]}}}'
ok 400 "$ALICE" POST /api/v1/experiments -H "$JSON" -d @"$TMP/bad.json"
jq -e '.detail | startswith("optimizer.lrr: unknown field")' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "an unknown searched key: want the spec's own message"; }
body "$TMP/bad.json" bad 4 '{"method": "pbt", "trials": 1, "space": {"optimizer.lr": {"log_uniform": [0.001, 0.1]}}}'
refused 400 "search.trials: a pbt search needs a population of at least 2 trials" "$ALICE" POST /api/v1/experiments \
    -H "$JSON" -d @"$TMP/bad.json"
body "$TMP/bad.json" bad 4 '{"method": "random", "trials": 2, "space": {"optimizer.lr": {"uniform": [-1, -0.5]}}}'
ok 400 "$ALICE" POST /api/v1/experiments -H "$JSON" -d @"$TMP/bad.json"
jq -e '.detail | startswith("optimizer.lr: must be")' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "a sampled value the spec refuses: want the spec's own message"; }
body "$TMP/grid.json" cx 40 '{"method": "grid", "max_concurrent": 1, "space": {"optimizer.lr": {"choice": [0.05, 0.02]}}}'
ok 403 "$CAROL" POST /api/v1/experiments -H "$JSON" -d @"$TMP/grid.json"
jq -e '.detail | test("viewers")' "$TMP/body" >/dev/null || { cat "$TMP/body"; fail "a viewer's 403 does not say why"; }
ok 404 "$ALICE" GET /api/v1/experiments/e-999
echo "ok: an unknown key and a refused value (the spec's messages), a pbt population of 1, a viewer (403), an unknown id (404)"

# ---- the ASHA search, with a coordinator restart in its middle ---------------------------------------------
body "$TMP/asha.json" sweep 6 '{"method": "asha", "trials": 6, "max_concurrent": 2, "min_epochs": 1,
    "reduction_factor": 3, "seed": 1, "space": {"optimizer.lr": {"choice": [0.05, 0.0001]}}}'
# each rank sleeps through 10x its steps (about a second an epoch here): a stop decided at a
# rung (its record, the next tick) and its cancel (mpirun's SIGTERM reaches the rank 1 s
# later, which stops at its next step) land epochs before a trial's last, on an idle machine
# too (unslowed, a trial's 6 epochs took under a second and often ended before its stop)
jq '.spec.emulate.slowdown = [10]' "$TMP/asha.json" >"$TMP/asha.t" && mv "$TMP/asha.t" "$TMP/asha.json"
ok 201 "$ADMIN" POST /api/v1/experiments -H "$JSON" -d @"$TMP/asha.json"
X=$(jq -r .id "$TMP/body")
jq -e '.state == "RUNNING" and .rungs == [1, 3] and (.trials | length) == 6 and .trials[0].state == "QUEUED"
    and ([.trials[].params["optimizer.lr"]] == [0.05, 0.0001, 0.05, 0.0001, 0.0001, 0.0001])' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "the new experiment: want RUNNING, rungs [1, 3], 6 trials of seed 1's documented params"; }
# ---- an experiment that fails: its one trial's job cancelled before it evaluates (queued behind the
# ASHA search's first two trials, which fill both slots; should it start, its rank sleeps through 200x its
# steps, so that its first evaluation (16 steps) is tens of seconds away when the DELETE comes)
two_jobs() { [ "$(xq "$X" '[.trials[].job | select(. != null)] | length')" = 2 ]; }
await 60 "experiment $X's first two trials to have jobs" two_jobs
# the trials' ranks run unbound, on the CPUs this test has (Open MPI would pin each job's
# single rank to core 0, so that concurrent trials shared one core for their whole lives):
# two distinct ranks seen with the test's CPUs pass; a rank still narrower after a second
# of running fails (just started, before MPI_Init, one may show what Open MPI set). The
# ranks' own command lines start with the worker; mpirun's name it later.
ranks() { pgrep -f "^[^ ]*pacer-worker --spec $STATE"; }
own=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$$/status)
unbound=" " bound=""
ranks_seen() {
    for p in $(ranks); do
        c=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$p/status" 2>/dev/null)
        [ -n "$c" ] || continue
        if [ "$c" = "$own" ]; then
            case $unbound in *" $p "*) ;; *) unbound="$unbound$p " ;; esac
        elif [ "$(ps -o etimes= -p "$p" 2>/dev/null | tr -d ' ')" -ge 1 ] 2>/dev/null; then
            bound="trial rank $p is bound to CPUs $c after a second (this test has $own)"
            return 0
        fi
    done
    [ "$(echo $unbound | wc -w)" -ge 2 ]
}
await 60 "two trial ranks with the test's CPUs" ranks_seen
[ -z "$bound" ] || fail "$bound"
echo "ok: the concurrent trials' ranks are not bound (CPUs $own)"
body "$TMP/one.json" one 40 '{"method": "grid", "space": {"optimizer.lr": {"choice": [0.05]}}}'
jq '.spec.emulate.slowdown = [200]' "$TMP/one.json" >"$TMP/one.t" && mv "$TMP/one.t" "$TMP/one.json"
ok 201 "$ALICE" POST /api/v1/experiments -H "$JSON" -d @"$TMP/one.json"
H=$(jq -r .id "$TMP/body")
has_job() { [ "$(xq "$H" '.trials[0].job')" != null ]; }
await 60 "experiment $H's trial to have a job" has_job
HJ=$(xq "$H" '.trials[0].job')
was=$(q "$HJ" .state)
case $(call "$ALICE" DELETE "/api/v1/jobs/$HJ") in 200 | 202) ;; *) fail "DELETE of $H's job $HJ: $(cat "$TMP/body")" ;; esac
h_failed() { [ "$(xq "$H" .state)" = FAILED ]; }
await 60 "experiment $H to fail" h_failed
[ "$(xq "$H" .reason)" = "no trial produced an evaluation" ] || fail "experiment $H: reason '$(xq "$H" .reason)'"
echo "ok: experiment $H FAILED, its one trial's job $HJ cancelled while $was"
exp_events() { rcli XRANGE pacer:events - + | grep "\"experiment\":\"$X\""; }
decided() { exp_events | grep -q '"action":"\(promoted\|stopped\)"'; }
await 120 "experiment $X's first ASHA decision" decided
stop_coord
restart_at=$(date +%s.%N)
start_coord --webhook-hosts 127.0.0.1
BASE=$(api_base)
is_x_state() { [ "$(xq "$X" .state)" = "$1" ]; }
await 240 "experiment $X to succeed after the restart" is_x_state SUCCEEDED
xq "$X" . >"$TMP/x.json"
jq -e '[.trials[] | select(.job == null or (.state | IN("SUCCEEDED", "STOPPED") | not))] | length == 0' "$TMP/x.json" \
    >/dev/null || { cat "$TMP/x.json"; fail "a trial of $X did not end SUCCEEDED or STOPPED"; }
# none lost, none twice: one job per trial, named sweep-t0 .. sweep-t5
curl -s -H "Authorization: Bearer $PACER_TOKEN" "$BASE/api/v1/jobs?limit=200" |
    jq -r '.jobs[].name | select(startswith("sweep-t"))' | sort >"$TMP/names"
printf 'sweep-t%d\n' 0 1 2 3 4 5 | diff - "$TMP/names" >/dev/null ||
    { cat "$TMP/names"; fail "the jobs of $X are not one per trial (sweep-t0..5)"; }
# the search went on after the restart: a trial's job was submitted by the new coordinator
jq -r '.trials[].job' "$TMP/x.json" | while read -r j; do q "$j" .submitted; done >"$TMP/submitted"
awk -v r="$restart_at" '$1 > r { n++ } END { exit !(n > 0) }' "$TMP/submitted" ||
    fail "no trial of $X started after the coordinator's restart at $restart_at: $(cat "$TMP/submitted")"
j0=$(jq -r '.trials[0].job' "$TMP/x.json")
[ "$(q "$j0" '"\(.experiment) \(.trial)"')" = "$X 0" ] || fail "job $j0 does not say it is trial 0 of $X"
stopped=$(jq '[.trials[] | select(.state == "STOPPED")] | length' "$TMP/x.json")
[ "$stopped" -ge 1 ] || { cat "$TMP/x.json"; fail "ASHA stopped no trial of $X"; }
exp_events | grep -q '"action":"promoted"' || fail "ASHA promoted no trial of $X"
# a promoted trial still running is worth rf^rungs to --policy hetero's placement
grep "experiment $X: trial [0-5] (.*) passed [12] rung(s): worth [39] to the placement" "$TMP/coord.log" ||
    { grep "experiment $X" "$TMP/coord.log"; fail "no promoted trial of $X was worth 3 or 9 to the placement"; }
# a stopped trial stopped at its rung: cancelled before its last epoch, its slots freed
for t in $(jq -r '.trials[] | select(.state == "STOPPED") | .job' "$TMP/x.json"); do
    await 60 "stopped trial $t's job to be cancelled" is_api_state "$t" CANCELLED
    ep=$(jq --arg j "$t" '.trials[] | select(.job == $j) | .epochs_trained' "$TMP/x.json")
    [ "$ep" -lt 6 ] || fail "stopped trial $t: trained $ep epochs, want fewer than 6"
done
# every decision follows the rule: the (1 - 1/3) quantile of the metrics that reached the rung before
exp_events | python3 -c '
import json, sys
recorded, bad, n = {}, [], 0
for line in sys.stdin:
    ev = json.loads(line[line.index("{"):])
    if ev.get("action") not in ("promoted", "stopped"):
        continue
    n += 1
    prev = sorted(recorded.setdefault(ev["rung"], []))
    go = True
    if prev:
        pos = (1 - 1 / 3) * (len(prev) - 1)
        lo = int(pos)
        cut = prev[lo] + (pos - lo) * (prev[lo + 1] - prev[lo]) if lo + 1 < len(prev) else prev[lo]
        go = ev["metric"] >= cut - 1e-12
    if go != (ev["action"] == "promoted") or ev["compared"] != len(prev):
        bad.append(ev)
    recorded[ev["rung"]].append(ev["metric"])
if bad or n == 0:
    sys.exit("decisions against the rule (or none): %s" % bad)
' || fail "experiment $X: a promotion or stop does not follow ASHA's rule"
jq -e '.best.metric >= ([.trials[].metric | select(. != null)] | max) - 1e-9 or .best.epochs_trained == 6' \
    "$TMP/x.json" >/dev/null || { cat "$TMP/x.json"; fail "experiment $X: best is not a trial that went furthest"; }
echo "ok: ASHA experiment $X: $stopped of 6 trials stopped at a rung (jobs cancelled early), the rest promoted, every decision by the rule; a coordinator restart lost no trial and the search went on"

# ---- a member's experiment: another member's cancel is refused, their own is not --------------------------
out=$(PACER_TOKEN=$ALICE "$PACER" --url "$BASE" experiment submit "$TMP/grid.json") || fail "pacer experiment submit failed"
G=$(echo "$out" | awk '{print $1}' | tr -d :)
case "$G" in e-*) ;; *) fail "pacer experiment submit printed '$out', want the id" ;; esac
running_trial() { [ "$(xq "$G" '.trials[0].state')" = RUNNING ]; }
await 60 "experiment $G's first trial to run" running_trial
ok 403 "$BOB" DELETE "/api/v1/experiments/$G"
jq -e '.detail | test("alice")' "$TMP/body" >/dev/null || { cat "$TMP/body"; fail "bob's 403 does not name the owner"; }
PACER_TOKEN=$ALICE "$PACER" --url "$BASE" experiment cancel "$G" | grep -q "^$G: CANCELLED" || fail "pacer experiment cancel $G"
all_cancelled() {
    [ "$(xq "$G" '[.trials[] | select(.state == "CANCELLED")] | length')" = 2 ] &&
        [ "$(q "$(xq "$G" '.trials[0].job')" .state)" = CANCELLED ]
}
await 60 "experiment $G's trials to be cancelled" all_cancelled
[ "$(xq "$G" .trials[1].job)" = null ] || fail "cancelled experiment $G started its second trial"
ok 409 "$ALICE" DELETE "/api/v1/experiments/$G"
echo "ok: bob may not cancel alice's experiment (403); alice's cancel stops every trial; a second cancel is 409"

# ---- the webhooks: each experiment's end once, signed; alice hears hers only -------------------------------
hooks_got() { [ "$(grep -c '"/admin"' "$TMP/got.jsonl" 2>/dev/null)" -ge 3 ] && [ "$(grep -c '"/alice"' "$TMP/got.jsonl")" -ge 2 ]; }
await 60 "the webhook receiver to get the ends of $X, $G and $H" hooks_got
python3 tests/webhook_receiver.py check "$TMP/got.jsonl" /admin "$SECRET" \
    "experiment.succeeded=$X" "experiment.cancelled=$G" "experiment.failed=$H" || fail "the admin's webhook"
python3 tests/webhook_receiver.py check "$TMP/got.jsonl" /alice "$SECRET" \
    "experiment.cancelled=$G" "experiment.failed=$H" || fail "alice's webhook"
echo "ok: the admin's webhook got the ends of $X, $G and $H, alice's those of her $G and $H, once each and signed"

# what Redis holds is outside input: a damaged trial is named, never shown as if whole
rcli HSET "pacer:experiment:$G" trial:1 '{"job":"../../etc","state":"PENDING","epochs":0,"rungs":[],"cursor":"0"}' >/dev/null
refused 500 "experiment $G: trial:1 is damaged" "$ALICE" GET "/api/v1/experiments/$G"
echo "ok: a damaged trial record is a 500 naming it"

# ---- the CLI and the Python client ---------------------------------------------------------------------------
"$PACER" --url "$BASE" experiment ls >"$TMP/ls.txt" || fail "pacer experiment ls"
grep -q "^$X *SUCCEEDED *sweep *asha *6 " "$TMP/ls.txt" || { cat "$TMP/ls.txt"; fail "pacer experiment ls: no row for $X"; }
"$PACER" --url "$BASE" experiment get "$X" >"$TMP/get.txt" || fail "pacer experiment get"
grep -q "^best: " "$TMP/get.txt" && grep -q "STOPPED" "$TMP/get.txt" || { cat "$TMP/get.txt"; fail "pacer experiment get $X"; }
PYTHONPATH=clients/python python3 - "$BASE" "$ALICE" "$X" <<'PY' || fail "the Python client's experiments"
import sys
import pacer
c = pacer.Client(sys.argv[1], sys.argv[2])
ids = [e["id"] for e in c.experiments()]
assert sys.argv[3] in ids, ids
x = c.experiment(sys.argv[3])
assert x.state == "SUCCEEDED" and x.best is not None and len(x.trials) == 6, x.info
PY
echo "ok: pacer experiment submit|ls|get|cancel and the Python client's experiments"

# ---- the dashboard's pages (static/experiments.js), in a real browser where there is one ------------------
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ] && command -v node >/dev/null && [ -d tests/browser/node_modules/playwright-core ]; then
    CHROMIUM=$CHROMIUM timeout 120 node tests/browser/experiment.mjs "$BASE" "$ADMIN" "$X" "$BUILD/experiment.png" ||
        fail "the dashboard's experiment pages"
    echo "ok: the dashboard's Experiments list and page: curves, scatter, stopped grey, best highlighted ($BUILD/experiment.png)"
else
    echo "ok (the dashboard's pages not checked: they need chromium, node and tests/browser's playwright-core, npm ci there)"
fi
