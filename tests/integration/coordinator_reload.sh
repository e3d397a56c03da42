# The host list reloads without a restart (issue 14): POST /api/v1/cluster/reload and
# SIGHUP read the hostfile again. Hosts that stay keep their state, new ones are probed
# (here through a stand-in remote shell, OMPI_MCA_plm_rsh_agent, that reaches "extra"
# and not "ghost", which goes down with the probe's reason), removed ones disappear; a
# hostfile that cannot be read is a 500 that names the line, and the old list stays.
# A job queued meanwhile still runs (on localhost: mpirun needs no remote shell there).
. tests/integration/coordinator_lib.inc
command -v curl >/dev/null || skip "curl not installed (make deps)"
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat >"$TMP/rsh" <<'SH'
#!/bin/sh
# A remote shell that reaches every host but "ghost".
while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done
[ "$1" = ghost ] && { echo "ghost: no route to host" >&2; exit 255; }
shift
exec sh -c "$*"
SH
export OMPI_MCA_plm_rsh_agent="sh $TMP/rsh"
printf 'localhost slots=2\n' >"$TMP/hosts"
# No pre-flight benchmark before the job (multihost.sh tests it): only the reloads here,
# and a benchmark that fails everywhere (no CIFAR-10 under this $PACER_SHARED; the job's
# Fashion-MNIST is Debian's).
export PACER_SHARED=$TMP/no-shared
start_coord --listen 127.0.0.1:0 --hostfile "$TMP/hosts" --host-probe 1 --preflight off
API=$(grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')
[ -n "$API" ] || fail "the coordinator did not say where it serves"
hosts() { cli cluster | jq -r '[.coordinator.hosts[] | "\(.name):\(.slots):\(.state)"] | join(" ")'; }
hosts_are() { [ "$(hosts)" = "$1" ]; }
await 10 "the cluster to show localhost up" hosts_are "localhost:2:up"
echo "ok: at start: localhost, 2 slots, up"

# POST: two new hosts.
printf 'localhost slots=2\nextra slots=3\nghost\n' >"$TMP/hosts"
code=$(curl -sS -o "$TMP/body" -w '%{http_code}' -X POST "$API/api/v1/cluster/reload")
[ "$code" = 200 ] || fail "POST /api/v1/cluster/reload answered $code: $(cat "$TMP/body")"
[ "$(jq -r '.added | join(" ")' "$TMP/body")" = "extra ghost" ] || fail "added: $(jq -c .added "$TMP/body")"
[ "$(jq -r .slots "$TMP/body")" = 6 ] || fail "slots after the reload: $(jq .slots "$TMP/body")"
await 15 "ghost to be found down and extra up" hosts_are "localhost:2:up extra:3:up ghost:1:down"
cli cluster | jq -r '.coordinator.hosts[] | select(.name == "ghost") | .reason' | grep -q "unreachable: the remote shell could not run a command there (exit 255)" ||
    fail "ghost's reason: $(cli cluster | jq -c '.coordinator.hosts[2]')"
[ "$(cli cluster | jq -r .coordinator.slots_usable)" = 5 ] || fail "usable slots: $(cli cluster | jq .coordinator.slots_usable)"
grep -q "host list reloaded (hostfile launcher): 3 hosts, 6 slots; added \[extra ghost\]" "$TMP/coord.log" ||
    fail "the coordinator log does not say what the reload found"
redis-cli -s "$STATE/redis.sock" --raw XRANGE pacer:events - + | grep -q '"type":"host","host":"ghost","state":"down"' ||
    fail "no host event for ghost"
echo "ok: POST /api/v1/cluster/reload: extra and ghost added; the probe finds ghost down (event, reason), 5 usable slots"

# A hostfile that cannot be read: 500 naming the line; the old list stays.
printf 'localhost slots=2\nextra slots=0\n' >"$TMP/hosts"
code=$(curl -sS -o "$TMP/body" -w '%{http_code}' -X POST "$API/api/v1/cluster/reload")
[ "$code" = 500 ] || fail "a bad hostfile: POST answered $code: $(cat "$TMP/body")"
jq -r .detail "$TMP/body" | grep -q "hosts:2: slots must be 1 to" || fail "detail: $(jq -r .detail "$TMP/body")"
[ "$(jq -r .type "$TMP/body")" = "urn:pacer:problem:reload-failed" ] || fail "type: $(jq -r .type "$TMP/body")"
hosts_are "localhost:2:up extra:3:up ghost:1:down" || fail "hosts changed by a failed reload: $(hosts)"
echo "ok: a bad hostfile: 500 reload-failed naming line 2; the hosts stay"

# SIGHUP: ghost removed; the others keep their state.
printf 'localhost slots=2\nextra slots=3\n' >"$TMP/hosts"
kill -HUP "$COORD_PID"
await 10 "SIGHUP to drop ghost" hosts_are "localhost:2:up extra:3:up"
kill -0 "$COORD_PID" || fail "the coordinator died on SIGHUP"
echo "ok: SIGHUP: ghost removed, the coordinator runs on"

# A benchmark that fails on every host blames the model's data, not the hosts: their
# states stay, each host's benchmark says why.
code=$(curl -sS -o "$TMP/body" -w '%{http_code}' -X POST "$API/api/v1/cluster/benchmark?model=cifar10_quick&dataset=cifar10")
[ "$code" = 202 ] || fail "POST /api/v1/cluster/benchmark answered $code: $(cat "$TMP/body")"
[ "$(jq -r '.hosts | join(" ")' "$TMP/body")" = "localhost extra" ] || fail "benchmarked hosts: $(cat "$TMP/body")"
bench_failed() {
    cli cluster | jq -e '[.coordinator.hosts[] | select(.benchmark.running == false and .benchmark.model == "cifar10_quick" and
        (.benchmark.error | length) > 0)] | length == 2'
}
await 60 "the cifar10_quick benchmark to fail on both hosts" bench_failed
hosts_are "localhost:2:up extra:3:up" || fail "hosts after a benchmark that failed everywhere: $(hosts)"
cli cluster | jq -r '.coordinator.hosts[0].benchmark.error' | grep -q "cifar" ||
    fail "localhost's benchmark error: $(cli cluster | jq -c '.coordinator.hosts[0].benchmark')"
grep -q "benchmark of cifar10_quick failed on every host: host states unchanged" "$TMP/coord.log" ||
    fail "the log does not say why the states stay"
echo "ok: a benchmark failing on every host (no CIFAR-10): errors recorded, both hosts stay up"

# A job still runs after the reloads (one worker: by slot, on localhost).
spec "$TMP/small.json" small 1
id=$(submit "$TMP/small.json")
cli wait "$id" --timeout 90 || { tail -20 "$STATE/jobs/$id/log"; fail "job $id did not succeed after the reloads"; }
echo "ok: job $id SUCCEEDED after the reloads"
stop_coord
