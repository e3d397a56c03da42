# Generations hold no HTTP thread (http/handlers_generate.c): with --http-threads 2, two
# JSON-mode generations of about 6 s each run while GET /healthz answers within 2 s (each
# used to hold a server thread for its whole run: four made /healthz take 9.5 s); both
# still answer 200 with their summary. A JSON-mode client that goes away after 1 s has its
# generation stopped: the pacer-generate process is gone within 3 s, long before its own
# end. pacer-generate is a stand-in here (a script beside the worker, --worker): it prints
# one token line every 0.1 s, 60 of them, then the summary, and records its pid; the job it
# answers for is a LeNet-5 on generated IDX files, trained for real. Last, the daemon stops
# cleanly (exit 0 on SIGTERM) while a generation runs, its process gone.
. tests/integration/coordinator_lib.inc
need_api_tools
mkdir -p "$TMP/root/digits"
$BUILD/tools/gen_dataset idx "$TMP/root/digits" 640 100 7 || fail "cannot generate IDX files"
mkdir -p "$TMP/bin"
ln -s "$(cd "$(dirname "$WORKER")" && pwd)/pacer-worker" "$TMP/bin/pacer-worker"
cat >"$TMP/bin/pacer-generate" <<SH
#!/bin/sh
echo \$\$ >>"$TMP/gen.pids"
i=0
while [ \$i -lt 60 ]; do
    echo '{"token": 97, "text": "a"}'
    sleep 0.1
    i=\$((i + 1))
done
echo '{"done": true, "text": "aaa", "tokens": 60, "prompt_tokens": 1, "tokens_per_s": 10, "prompt_truncated": false}'
SH
chmod +x "$TMP/bin/pacer-generate"
start_coord_admin --data-root "$TMP/root" --worker "$TMP/bin/pacer-worker" --http-threads 2
jq -n --arg data "$TMP/root/digits" '{name: "any", model: "lenet5",
      dataset: {name: "mnist", path: $data, train_subset: 128, test_subset: 64}, batch_size: 64, epochs: 1, seed: 7,
      log_every: 0, device: "cpu"}' >"$TMP/job.json"
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/job.json"
id=$(jq -r .id "$TMP/body")
await 120 "job $id to succeed" is_api_state "$id" SUCCEEDED
P=$BASE/api/v1/jobs/$id/generate

gen() { # OUT [CURL ARGS...]
    out=$1
    shift
    curl -s -o "$out" -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN" -H "$JSON" -d '{"prompt": "a"}' \
        "$@" "$P" >"$out.code"
}
gen "$TMP/g1.json" &
g1=$!
sleep 0.3
gen "$TMP/g2.json" &
g2=$!
await 5 "two generations to run" sh -c "[ \$(wc -l <'$TMP/gen.pids') -ge 2 ]"
sleep 0.5
t0=$(now)
code=$(curl -s -o "$TMP/healthz" -w '%{http_code}' --max-time 30 "$BASE/healthz")
took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
[ "$code" = 200 ] || fail "/healthz answered $code during the generations"
at_most "/healthz's time (s) while 2 generations run on 2 HTTP threads" "$took" 2
wait "$g1" "$g2"
for g in g1 g2; do
    [ "$(cat "$TMP/$g.json.code")" = 200 ] || { cat "$TMP/$g.json"; fail "generation $g answered $(cat "$TMP/$g.json.code")"; }
    jq -e '.tokens == 60 and .text == "aaa" and (has("done") | not)' "$TMP/$g.json" >/dev/null ||
        fail "generation $g's answer: $(cat "$TMP/$g.json")"
done
echo "ok: /healthz answered in $took s while 2 JSON-mode generations held the 2 HTTP threads' requests; both answered 200"

# A client that goes away: its generation's process ends.
gen "$TMP/g3.json" --max-time 1
pid=$(tail -1 "$TMP/gen.pids")
gone() { ! kill -0 "$pid" 2>/dev/null; }
await 3 "the generation of a client gone after 1 s (pid $pid) to be stopped" gone
echo "ok: a JSON-mode client that disconnected had its generation stopped (pid $pid gone)"

# The daemon stops cleanly with a generation waiting for its answer (libmicrohttpd must not
# stop with a connection suspended: generate_shutdown ends the generation first).
gen "$TMP/g4.json" &
await 5 "a fourth generation to run" sh -c "[ \$(wc -l <'$TMP/gen.pids') -ge 4 ]"
stop_coord
wait
pid=$(tail -1 "$TMP/gen.pids")
gone || fail "the coordinator stopped and left its generation's process $pid running"
echo "ok: the coordinator stops with a generation running, and its process is gone"
