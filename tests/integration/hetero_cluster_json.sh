# The simulator's cluster file from measured profiles (issue 46): a coordinator with four
# hosts (pw1..pw3 a slot each, pw4 two; a remote shell that reaches none, so they go down:
# the file describes the cluster, not its health) and profiles seeded into Redis as
# hetero_netns seeds them (pacer:profile:{host}:cpu:{model}; lenet5 4x faster on pw1 than
# on pw2 and pw3, mlp 1.25x), plus one whose model name the simulator cannot take and one
# malformed one (skipped). GET /api/v1/cluster/classes and `pacer cluster-json -o FILE`
# give x1 (pw1), x1/2 (pw2, pw3) and unmeasured (pw4) with each model's speeds per class;
# pacer-sched-sim accepts the file and places a small trace's jobs on exactly its classes,
# deterministically (two runs, the same bytes).
. tests/integration/coordinator_lib.inc
PACER=$BUILD/pacer
SIM=$BUILD/pacer-sched-sim
[ -x "$PACER" ] || skip "$PACER not built: libcurl missing (make deps installs libcurl4-openssl-dev)"
[ -x "$SIM" ] || fail "$SIM not built (make $SIM)"
need_api_tools
printf '#!/bin/sh\necho "no remote host in this test" >&2\nexit 255\n' >"$TMP/rsh"
export OMPI_MCA_plm_rsh_agent="sh $TMP/rsh"
printf 'pw1\npw2\npw3\npw4 slots=2\n' >"$TMP/hosts"
start_coord --hostfile "$TMP/hosts" --host-probe 1 --preflight off
BASE=$(api_base)
export PACER_URL=$BASE

# profile HOST MODEL SAMPLES_PER_S - a stored profile (a job's end and the benchmark write them).
profile() {
    k=pacer:profile:$1:cpu:$2
    rcli HSET "$k" host "$1" device cpu model "$2" samples_per_s "$3" >/dev/null || fail "HSET $k"
    rcli SADD pacer:profiles "$k" >/dev/null || fail "SADD $k"
}
. tests/integration/hetero_profiles.inc
profile pw1 a-model-name-longer-than-31-bytes 5
profile pw4 lenet5 not-a-number

want='{"classes":[{"hosts":1,"name":"x1","slots":1},{"hosts":2,"name":"x1/2","slots":1},{"hosts":1,"name":"unmeasured","slots":2}],"speeds":{"lenet5":{"x1":1000,"x1/2":250},"mlp":{"x1":1000,"x1/2":800}}}'
code=$(curl -s -o "$TMP/body" -w '%{http_code}' "$BASE/api/v1/cluster/classes")
[ "$code" = 200 ] || fail "GET /api/v1/cluster/classes: HTTP $code $(cat "$TMP/body")"
got=$(jq -cS .cluster "$TMP/body")
[ "$got" = "$want" ] || fail "GET /api/v1/cluster/classes: $got, want $want"
jq -e '.hosts_by_class == {"x1": ["pw1"], "x1/2": ["pw2", "pw3"], "unmeasured": ["pw4"]} and
       .left_out == [{"model": "a-model-name-longer-than-31-bytes", "why": "a name longer than 31 bytes"}]' \
    "$TMP/body" >/dev/null || fail "hosts_by_class or left_out: $(jq -c '{hosts_by_class, left_out}' "$TMP/body")"
echo "ok: GET /api/v1/cluster/classes: x1, x1/2 and unmeasured from the profiles, the long name left out and said"

"$PACER" cluster-json -o "$TMP/cluster.json" 2>"$TMP/err" || fail "pacer cluster-json: exit $? ($(cat "$TMP/err"))"
[ "$(jq -cS . "$TMP/cluster.json")" = "$want" ] || fail "pacer cluster-json wrote $(jq -c . "$TMP/cluster.json")"
grep -q "^pacer cluster-json: x1/2: pw2 pw3$" "$TMP/err" || fail "pacer cluster-json's notes: $(cat "$TMP/err")"
grep -q "^pacer cluster-json: left out model a-model-name-longer-than-31-bytes: a name longer than 31 bytes$" \
    "$TMP/err" || fail "pacer cluster-json does not say what it left out: $(cat "$TMP/err")"
[ "$("$PACER" cluster-json | jq -cS .)" = "$want" ] || fail "pacer cluster-json to standard output differs"
echo "ok: pacer cluster-json writes the same file, says the hosts of each class and what it left out"

# The simulator takes the file: lenet5 and mlp jobs (one elastic) over its three classes.
for i in 0 1 2 3 4 5; do
    t=$([ $((i % 2)) = 0 ] && echo lenet5 || echo mlp)
    printf '{"id": "j%d", "arrival_s": %d, "type": "%s", "workers": %d, "samples": 2000000, "elastic": %s}\n' \
        "$i" $((i * 60)) "$t" $((i % 3 + 1)) "$([ "$i" = 3 ] && echo true || echo false)"
done >"$TMP/trace.jsonl"
for r in 1 2; do
    "$SIM" --cluster "$TMP/cluster.json" --trace "$TMP/trace.jsonl" --policy hetero --jobs-out "$TMP/jobs-$r" \
        >"$TMP/sum-$r" || fail "pacer-sched-sim refused the file: exit $?"
done
cmp -s "$TMP/sum-1" "$TMP/sum-2" && cmp -s "$TMP/jobs-1" "$TMP/jobs-2" || fail "two simulations differ"
[ "$(json "$TMP/sum-1" .jobs)" = 6 ] || fail "the simulation ran $(json "$TMP/sum-1" .jobs) jobs, want 6"
used=$(jq -r '.allocations[].slots | keys[]' "$TMP/jobs-1" | sort -u | tr '\n' ' ')
[ -n "$used" ] || fail "no job held slots"
for c in $used; do
    case " x1 x1/2 unmeasured " in *" $c "*) ;; *) fail "a job held slots of class '$c', not in the file" ;; esac
done
jq -s -e '[.[] | select(.type == "lenet5") | .allocations[0].slots | has("x1")] | any' "$TMP/jobs-1" >/dev/null ||
    fail "no lenet5 job started on x1, where it gains most: $(head -c 600 "$TMP/jobs-1")"
echo "ok: pacer-sched-sim accepts the file; its jobs hold slots of its classes only ($used), the same in two runs"
