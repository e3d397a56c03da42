# --policy hetero on the network-namespace cluster (issue 46; tests/integration/netns_cluster.inc:
# pw1..pw3, a slot each): two host classes from profiles the test seeds into Redis
# (pacer:profile:{host}:cpu:{model}, as finished jobs and benchmarks write them): lenet5
# runs 4x faster on pw1 than on pw2 and pw3, mlp only 1.25x, so the coordinator groups pw1
# as class x1 and pw2, pw3 as x1/2 (hclass.h: the geometric mean of a host's ratios, in
# power-of-two buckets). A 1-worker lenet5 job is submitted first, then a 2-worker mlp job:
# the policy places the first on the x1 class (the fastest for it) and the second on the
# two x1/2 hosts (the only free ones; pw1 is held). Whether the two land in one tick or in
# two, the prediction is the same. Checked from the API: each job's placement (hosts by
# class, the policy's sentence), the hosts of its attempt, and the hosts its ranks reported
# from (the nodes), the hosts the Cluster record says each job holds, the answers against
# docs/openapi.json and pacer get's placement line, all while both run; then both are
# cancelled. Own prefix phe- and /24 10.84.0 (bench/tcp_eager.sh
# uses 10.83.0). Needs root (else exit 77).
T=hetero_netns T_PREFIX=phe- T_NET=10.84.0 T_COORD_ARGS="--policy hetero"
. tests/integration/netns_cluster.inc

# profile HOST MODEL SAMPLES_PER_S - a stored profile, as dynbatch_fold_profiles writes one.
profile() {
    k=pacer:profile:$1:cpu:$2
    redis-cli -h "$PC" HSET "$k" host "$1" device cpu model "$2" samples_per_s "$3" >/dev/null || fail "HSET $k"
    redis-cli -h "$PC" SADD pacer:profiles "$k" >/dev/null || fail "SADD $k"
}
. tests/integration/hetero_profiles.inc

# spec FILE NAME MODEL WORKERS - an ssgd job on Fashion-MNIST that would run for minutes at
# the least (rank 0 sleeps through 1000x its step, emulate: no value changed; 100 epochs):
# everything is checked while both run, then both are cancelled.
spec() {
    cat >"$1" <<JSON
{"name": "$2", "model": "$3", "algorithm": {"name": "ssgd"}, "workers": $4, "batch_size": 32,
 "dataset": {"name": "fashion-mnist", "train_subset": 512, "test_subset": 200},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "epochs": 100, "seed": 5, "log_every": 4,
 "emulate": {"schedule": [{"step": 0, "rank": 0, "slowdown": 1000}]}}
JSON
}
spec "$TMP/a.json" lenet-fast lenet5 1
spec "$TMP/b.json" mlp-slow mlp 2
a=$(submit "$TMP/a.json")
b=$(submit "$TMP/b.json")

# placed ID CLASSES_JSON HOSTS_JSON - waits (3 min at most) for the job's placement, then
# checks it and the hosts of its attempt.
placed() {
    end=$(($(date +%s) + 180))
    until [ "$(http GET "/api/v1/jobs/$1")" = 200 ] && [ "$(jq -c '.placement.hosts_by_class // empty' "$TMP/body")" != "" ]; do
        [ "$(date +%s)" -ge "$end" ] && { tail -30 "$TMP/coord.log"; fail "job $1 not placed after 180 s: $(jq -c '{state, reason, queue}' "$TMP/body")"; }
        sleep 0.3
    done
    got=$(jq -c .placement.hosts_by_class "$TMP/body")
    [ "$got" = "$2" ] || fail "job $1 placed on $got, want $2 ($(jq -r .placement.reason "$TMP/body"))"
    jq -r .placement.reason "$TMP/body" | grep -q '^placed on .*(hetero)$' ||
        fail "job $1: placement reason '$(jq -r .placement.reason "$TMP/body")'"
    until [ "$(http GET "/api/v1/jobs/$1")" = 200 ] && [ "$(jq -c '.hosts // []' "$TMP/body")" != "[]" ]; do
        [ "$(date +%s)" -ge "$end" ] && fail "job $1: no hosts recorded after 180 s"
        sleep 0.3
    done
    [ "$(jq -c .hosts "$TMP/body")" = "$3" ] || fail "job $1's attempt uses $(jq -c .hosts "$TMP/body"), want $3"
    # the answer with its placement, for the document's check below
    cp "$TMP/body" "$TMP/answer-$1.json"
    printf 'GET\t/api/v1/jobs/%s\t200\tapplication/json\t%s\n' "$1" "$TMP/answer-$1.json" >>"$TMP/index"
    echo "ok: $1 $got: $(jq -r .placement.reason "$TMP/body")"
}
placed "$a" '{"x1":["pw1"]}' '["pw1"]'
placed "$b" '{"x1/2":["pw2","pw3"]}' '["pw2","pw3"]'
# the answers against docs/openapi.json, strictly (an undocumented field fails)
if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 tests/tools/openapi_check.py docs/openapi.json "$TMP/index" || fail "job answers with a placement that docs/openapi.json does not describe"
fi
# running ID - fails when the job has ended (they run for minutes: see spec).
running() {
    case $(state_of "$1") in SUCCEEDED | FAILED | CANCELLED) fail "job $1 ended before it was checked: $(jq -r .reason "$TMP/body")" ;; esac
}
# The Cluster record: who holds which host.
end=$(($(date +%s) + 120))
until [ "$(http GET /api/v1/cluster)" = 200 ] &&
    [ "$(jq -c '[.coordinator.hosts[] | {(.name): .jobs}] | add' "$TMP/body")" = "{\"pw1\":[\"$a\"],\"pw2\":[\"$b\"],\"pw3\":[\"$b\"]}" ]; do
    [ "$(date +%s)" -ge "$end" ] && fail "the cluster's hosts never showed pw1 held by $a, pw2 and pw3 by $b: $(jq -c '[.coordinator.hosts[]? | {name, jobs}]' "$TMP/body")"
    running "$a"
    running "$b"
    sleep 0.3
done
echo "ok: the cluster shows pw1 held by $a, pw2 and pw3 by $b"
# ran_on ID HOSTS - waits until its ranks have reported from HOSTS (the node hashes, sorted).
ran_on() {
    end=$(($(date +%s) + 120))
    until [ "$(http GET "/api/v1/jobs/$1/nodes")" = 200 ] && [ "$(jq -c '[.ranks[]?.host] | sort' "$TMP/body")" = "$2" ]; do
        [ "$(date +%s)" -ge "$end" ] && fail "job $1's ranks ran on $(jq -c '[.ranks[]?.host]' "$TMP/body"), want $2"
        running "$1"
        sleep 0.3
    done
}
ran_on "$a" '["pw1"]'
ran_on "$b" '["pw2","pw3"]'
echo "ok: $a's rank runs on pw1, $b's on pw2 and pw3"
# pacer get shows the placement too
PACER_URL=$API PACER_TOKEN=$TOKEN PACER_ALLOW_INSECURE_TOKEN=1 "$B/pacer" get "$b" >"$TMP/get" 2>&1 || fail "pacer get $b: $(cat "$TMP/get")"
grep -q '^placement  *x1/2: pw2 pw3 (placed on 2 x1/2 slots: .* (hetero))$' "$TMP/get" ||
    fail "pacer get $b: no placement line: $(cat "$TMP/get")"
for j in "$a" "$b"; do
    case $(http DELETE "/api/v1/jobs/$j") in 200 | 202) ;; *) fail "DELETE /api/v1/jobs/$j: $(cat "$TMP/body")" ;; esac
done
end=$(($(date +%s) + 120))
until [ "$(state_of "$a")" = CANCELLED ] && [ "$(state_of "$b")" = CANCELLED ]; do
    [ "$(date +%s)" -ge "$end" ] && fail "jobs $a, $b not CANCELLED 120 s after their cancel"
    sleep 0.3
done
echo "ok: both cancelled"
