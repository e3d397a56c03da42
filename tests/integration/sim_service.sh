# A simulated job through the service (issue 12): the REST API takes a spec with
# "simulate": {"enabled": true, ...}, the daemon runs it with pacer-sim (the sim launcher,
# coordinator/launch_sim.c) instead of mpirun, and it ends SUCCEEDED with what a real job
# shows: metrics on its nodes endpoint (from the simulated hosts, heartbeats in real time),
# metrics records whose times are simulated seconds, a summary marked simulated; the job
# and the list say "simulated": true. Its simulated hosts are not folded into the
# persistent node profiles. A platform file named by name from the platform directory
# runs and can be cancelled; paths outside it (absolute, "..", a missing file, a
# hostfile) are a 400 naming the field; a coordinator without pacer-sim fails such a job
# with a reason naming simulate.enabled. Skips without libsimgrid-dev.
. tests/integration/coordinator_lib.inc
command -v curl >/dev/null || skip "curl not installed (make deps)"
command -v jq >/dev/null || skip "jq not installed (make deps)"
command -v smpirun >/dev/null 2>&1 || skip "libsimgrid-dev is not installed (no smpirun; make deps installs it)"
[ -x "$BUILD/pacer-sim" ] || fail "$BUILD/pacer-sim not built (make all)"
[ -x "${SMPI_BUILD:-build-smpi}/pacer-worker" ] || fail "${SMPI_BUILD:-build-smpi}/pacer-worker not built (make smpi)"
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

base_url() { grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //'; }
# post FILE - POST /api/v1/jobs; prints the status, the answer in $TMP/body.
post() { curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary "@$1" "$BASE/api/v1/jobs"; }
job_state() { curl -s "$BASE/api/v1/jobs/$1" | jq -r .state; }
is_job_state() { [ "$(job_state "$1")" = "$2" ]; }
# sim_job FILE OVERRIDES - a small simulated LeNet-5 job (4 workers on a [1,1,2,4] platform,
# 1024 training samples, deterministic) with OVERRIDES merged over it.
sim_job() {
    jq -n --argjson o "$2" '{
        name: "simjob", model: "lenet5", workers: 4, batch_size: 32, epochs: 2, seed: 3, log_every: 0,
        dataset: {name: "fashion-mnist", train_subset: 1024, test_subset: 256},
        optimizer: {lr: 0.01, momentum: 0.9}, algorithm: {name: "asgd"},
        simulate: {enabled: true, slowdown: [1, 1, 2, 4], deterministic: true}
    } * $o' >"$1" || fail "cannot write $1"
}

# --oversubscribe-factor 1: a simulated job's ranks are simulated hosts in one pacer-sim
# process, never counted against this machine's slots (the 422 does-not-fit admission).
start_coord --listen 127.0.0.1:0 --sim-platforms sim/platforms --oversubscribe-factor 1
BASE=$(base_url)
[ -n "$BASE" ] || { cat "$TMP/coord.log"; fail "no 'REST API ... on http://' line in the log"; }
curl -s "$BASE/api/v1/cluster" >"$TMP/cluster"
[ "$(jq -r .coordinator.simulator.available "$TMP/cluster")" = true ] ||
    { jq .coordinator.simulator "$TMP/cluster"; fail "the cluster does not say it can simulate"; }
jq -e '.coordinator.simulator.platforms | index("hetero-1124.xml")' "$TMP/cluster" >/dev/null ||
    fail "the cluster does not list sim/platforms/hetero-1124.xml: $(jq -c .coordinator.simulator "$TMP/cluster")"
echo "ok: the cluster offers simulation with $(jq '.coordinator.simulator.platforms | length' "$TMP/cluster") platform files"
slots=$(jq -r '.coordinator.slots | tonumber' "$TMP/cluster")
n=$((slots + 1))
sim_job "$TMP/big.json" "{\"workers\": $n, \"algorithm\": {\"name\": \"ssgd\"}, \"simulate\": {\"slowdown\": $(jq -nc --argjson n $n '[range($n)] | map(1)')}}"
[ "$(post "$TMP/big.json")" = 201 ] || { cat "$TMP/body"; fail "a simulated job of $n ranks on $slots real slots x 1 was refused"; }
big=$(jq -r .id "$TMP/body")
curl -s -o /dev/null -X DELETE "$BASE/api/v1/jobs/$big"
await 60 "simulated job $big to be cancelled" is_job_state "$big" CANCELLED
echo "ok: a simulated job of $n ranks is admitted beyond $slots real slots x --oversubscribe-factor 1"

# ---- a simulated job, end to end ---------------------------------------------------------------
sim_job "$TMP/a.json" '{}'
[ "$(post "$TMP/a.json")" = 201 ] || { cat "$TMP/body"; fail "POST of a simulated job: not 201"; }
id=$(jq -r .id "$TMP/body")
[ "$(jq -r .simulated "$TMP/body")" = true ] || { cat "$TMP/body"; fail "the submitted job is not marked simulated"; }
await 180 "simulated job $id to succeed" is_job_state "$id" SUCCEEDED
curl -s "$BASE/api/v1/jobs/$id" >"$TMP/job"
[ "$(jq -r '.simulated and .summary.simulated' "$TMP/job")" = true ] || { jq 'del(.spec)' "$TMP/job"; fail "job or summary not marked simulated"; }
grep -q "pacer-sim" "$STATE/jobs/$id/log" || fail "the job's log does not show pacer-sim starting it"
echo "ok: simulated job $id SUCCEEDED (simulated $(jq .summary.simulated_wall_s "$TMP/job") s, test accuracy $(jq .summary.test_accuracy "$TMP/job"))"
curl -s "$BASE/api/v1/jobs?limit=5" | jq -e --arg id "$id" '.jobs[] | select(.id == $id) | .simulated == true' >/dev/null ||
    fail "the job list does not mark $id simulated"

curl -s "$BASE/api/v1/jobs/$id/nodes" >"$TMP/nodes"
[ "$(jq -r '[.ranks[].host] | sort | join(" ")' "$TMP/nodes")" = "ps w0 w1 w2 w3" ] ||
    { jq -c '.ranks[] | {rank, host}' "$TMP/nodes"; fail "nodes: want the simulated hosts ps w0 w1 w2 w3"; }
jq -e '[.ranks[] | select(.role == "worker") | (.samples_per_s > 0 and .step > 0 and .heartbeat > 0)] | all and length == 4' \
    "$TMP/nodes" >/dev/null || { jq -c '.ranks[]' "$TMP/nodes"; fail "nodes: workers without metrics"; }
at_least "nodes: job staleness count" "$(jq .staleness.count "$TMP/nodes")" 60
curl -s "$BASE/api/v1/jobs/$id/metrics?limit=1000" >"$TMP/metrics"
last=$(jq '[.items[].time] | max' "$TMP/metrics")
awk -v t="$last" -v w="$(jq .summary.simulated_wall_s "$TMP/job")" 'BEGIN { exit !(t > 0 && t <= w + 0.001) }' ||
    fail "metrics times end at $last: not simulated seconds (simulated_wall_s $(jq .summary.simulated_wall_s "$TMP/job"))"
echo "ok: nodes endpoint: $(jq '.ranks | length' "$TMP/nodes") ranks on simulated hosts with metrics; $(jq '.items | length' "$TMP/metrics") records on the simulated clock (last $last s)"

# Its simulated hosts are not node profiles (they would invent hosts).
curl -s "$BASE/api/v1/cluster" >"$TMP/cluster"
if jq -e '[.profiles[].host] | map(select(. == "ps" or test("^w[0-9]+$"))) | length > 0' "$TMP/cluster" >/dev/null; then
    jq -c '.profiles' "$TMP/cluster"; fail "a simulated job's hosts were folded into the node profiles"
fi
echo "ok: no node profile from the simulated hosts"

# ---- a named platform file: runs, and cancels ------------------------------------------------
sim_job "$TMP/b.json" '{"epochs": 100000, "simulate": {"slowdown": [], "platform": "hetero-1124.xml"}}'
[ "$(post "$TMP/b.json")" = 201 ] || { cat "$TMP/body"; fail "POST with platform hetero-1124.xml: not 201"; }
id2=$(jq -r .id "$TMP/body")
await 60 "job $id2 to report a step" sh -c "curl -s '$BASE/api/v1/jobs/$id2/nodes' | jq -e '[.ranks[].step // 0] | max > 0'"
grep -q "sim/platforms/hetero-1124.xml" "$STATE/jobs/$id2/spec.json" || fail "the launched spec does not name the platform by its real path"
curl -s -o /dev/null -X DELETE "$BASE/api/v1/jobs/$id2"
await 60 "job $id2 to be cancelled" is_job_state "$id2" CANCELLED
sid=$(cut -d' ' -f1 "$STATE/jobs/$id2/pid")
left=$(ps -eo sid=,comm= | awk -v s="$sid" '$1 == s' | tee "$TMP/left" | wc -l)
[ "$left" = 0 ] || { cat "$TMP/left"; fail "$left processes of the cancelled simulation remain"; }
echo "ok: job $id2 on sim/platforms/hetero-1124.xml ran and was cancelled; nothing of it remains"

# ---- platform files outside the directory: 400 naming the field ----------------------------
refuse() { # OVERRIDES FIELD
    sim_job "$TMP/r.json" "$1"
    code=$(post "$TMP/r.json")
    [ "$code" = 400 ] || { cat "$TMP/body"; fail "$1: HTTP $code, want 400"; }
    [ "$(jq -r .field "$TMP/body")" = "$2" ] || { cat "$TMP/body"; fail "$1: the 400 does not name $2"; }
    echo "ok: 400 for $1: $(jq -r .detail "$TMP/body")"
}
refuse '{"simulate": {"slowdown": [], "platform": "/etc/hostname"}}' simulate.platform
refuse '{"simulate": {"slowdown": [], "platform": "sim/platforms/../../Makefile"}}' simulate.platform
refuse '{"simulate": {"slowdown": [], "platform": "nope.xml"}}' simulate.platform
refuse '{"simulate": {"slowdown": [], "platform": "hetero-1124.xml", "hostfile": "/etc/hosts"}}' simulate.hostfile
# The same spec without "enabled" is a real job: its paths are not the simulator's business.
# (One ssgd worker: a real job's ranks do count against the slots, x 1 here.)
sim_job "$TMP/real.json" '{"workers": 1, "algorithm": {"name": "ssgd"}, "simulate": {"enabled": false, "slowdown": [], "platform": "/etc/hostname"}}'
[ "$(post "$TMP/real.json")" = 201 ] || { cat "$TMP/body"; fail "a real job with a simulate section was refused"; }
[ "$(jq -r .simulated "$TMP/body")" = false ] || fail "a real job is marked simulated"
curl -s -o /dev/null -X DELETE "$BASE/api/v1/jobs/$(jq -r .id "$TMP/body")"
stop_coord

# ---- a coordinator that cannot simulate -----------------------------------------------------
start_coord --listen 127.0.0.1:0 --sim "$TMP/no-such-pacer-sim"
BASE=$(base_url)
grep -q "simulated jobs (simulate.enabled) will fail" "$TMP/coord.log" || fail "the coordinator did not say it cannot simulate"
[ "$(curl -s "$BASE/api/v1/cluster" | jq -r .coordinator.simulator.available)" = false ] || fail "cluster: simulator available without pacer-sim"
sim_job "$TMP/c.json" '{}'
[ "$(post "$TMP/c.json")" = 201 ] || { cat "$TMP/body"; fail "POST: not 201"; }
id3=$(jq -r .id "$TMP/body")
await 30 "job $id3 to fail" is_job_state "$id3" FAILED
reason=$(curl -s "$BASE/api/v1/jobs/$id3" | jq -r .reason)
case $reason in simulate.enabled:*) ;; *) fail "reason '$reason' does not name simulate.enabled" ;; esac
echo "ok: without pacer-sim a simulated job FAILED: $reason"
stop_coord
