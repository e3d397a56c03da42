# The REST API against the real coordinator and its embedded Redis, over curl: every
# endpoint, every error status with its problem+json shape (400 with "field", 401, 404,
# 405 with Allow, 409, 413, 415, 503 from a dead Redis and from the SSE limit), bearer
# auth (POST/DELETE with $PACER_TOKEN and --public-reads, then every read by default
# with --token-file), the limits, static files (no traversal, no listing), Prometheus text,
# and Server-Sent Events of a running job (live, replayed with Last-Event-ID, and cut
# mid-stream then resumed while the job runs: every record once, in order), the global
# /api/v1/events stream, 404 from every per-job route, HEAD on every GET route,
# cancelling a queued job (200) and a running one (202). Every answer's status, content
# type and body are checked against docs/openapi.json at the end (strict: no
# undocumented field), with python3-jsonschema.
. tests/integration/coordinator_lib.inc
command -v curl >/dev/null || skip "curl not installed (make deps)"
command -v jq >/dev/null || skip "jq not installed (make deps)"
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

TOKEN=test-token-$$
export PACER_TOKEN=$TOKEN
AUTH="Authorization: Bearer $TOKEN"
JSON="Content-Type: application/json"

# base_url - the address the daemon started last says it serves on (--listen 127.0.0.1:0).
base_url() { grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //'; }

# req METHOD PATH [CURL ARGS...] - prints the status; headers in $TMP/hdr, body in $TMP/body.
# Every answer is also recorded ($TMP/answers/) and checked against docs/openapi.json at
# the end (tests/tools/openapi_check.py: documented status, content type, strict schema).
mkdir -p "$TMP/answers"
req() {
    m=$1 p=$2
    shift 2
    if [ "$m" = HEAD ]; then
        # curl -I reads no body (it prints the headers to -o): keep those in hdr only.
        code=$(curl -s -I -o /dev/null -D "$TMP/hdr" -w '%{http_code}' "$@" "$BASE$p")
        : >"$TMP/body"
    else
        code=$(curl -s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' -X "$m" "$@" "$BASE$p")
    fi
    # (req runs in a command substitution: a counter would not survive it; mktemp does)
    saved=$(mktemp "$TMP/answers/body.XXXXXX")
    cp "$TMP/body" "$saved"
    printf '%s\t%s\t%s\t%s\t%s\n' "$m" "$p" "$code" "$(header Content-Type)" "$saved" >>"$TMP/answers/index"
    echo "$code"
}
# expect STATUS METHOD PATH [CURL ARGS...]
expect() {
    want=$1
    shift
    got=$(req "$@")
    [ "$got" = "$want" ] || { cat "$TMP/hdr" "$TMP/body"; fail "$1 $2: HTTP $got, want $want"; }
}
header() { grep -i "^$1:" "$TMP/hdr" | head -1 | cut -d' ' -f2- | tr -d '\r'; }
# problem TYPE [KEY VALUE] - the last answer is an RFC 7807 document of that type.
problem() {
    header Content-Type | grep -q '^application/problem+json' || { cat "$TMP/hdr"; fail "not problem+json"; }
    jq -e --arg t "urn:pacer:problem:$1" \
        '.type == $t and (.title | type == "string") and (.status | type == "number") and (.detail | type == "string")' \
        "$TMP/body" >/dev/null || { cat "$TMP/body"; fail "problem document: want type $1"; }
    if [ $# -ge 3 ]; then
        [ "$(jq -r ".$2" "$TMP/body")" = "$3" ] || { cat "$TMP/body"; fail "problem .$2: want $3"; }
    fi
}
job_state() { curl -s "$BASE/api/v1/jobs/$1" | jq -r .state; }
is_job_state() { [ "$(job_state "$1")" = "$2" ]; }

# ---- refusing to start: a non-loopback address without a token --------------------------
expect_error 2 "without a token" env -u PACER_TOKEN "$COORD" --state-dir "$TMP/refused" --listen 0.0.0.0:0

# A benchmark round waits while $HOLD exists: the second round below must find the first
# still running.
held_benchmark_worker
start_coord --listen 127.0.0.1:0 --public-reads --worker "$HELD_WORKER"
BASE=$(base_url)
[ -n "$BASE" ] || { cat "$TMP/coord.log"; fail "no 'REST API ... on http://' line in the log"; }
echo "ok: serving on $BASE"

# ---- health, docs, cluster, dashboard -------------------------------------------------------
expect 200 GET /healthz
[ "$(jq -r .status "$TMP/body")" = ok ] || fail "/healthz: $(cat "$TMP/body")"
expect 200 GET /api/v1/openapi.json
[ "$(jq -r .openapi "$TMP/body")" = 3.0.3 ] || fail "openapi.json is not OpenAPI 3"
jq -e '.paths["/api/v1/jobs/{id}/events"].get' "$TMP/body" >/dev/null || fail "openapi.json lacks the events path"
expect 200 GET /api/v1/cluster
[ "$(jq -r .alive "$TMP/body")" = true ] || fail "cluster: coordinator not alive"
expect 200 GET /
header Content-Type | grep -q '^text/html' || fail "/ is not text/html"
grep -q '<title>pacer</title>' "$TMP/body" || fail "/ is not the dashboard"
expect 200 GET /static/app.js
header Content-Type | grep -q '^text/javascript' || fail "app.js type: $(header Content-Type)"
expect 200 GET /static/style.css
header Content-Type | grep -q '^text/css' || fail "style.css type"
expect 404 GET /static/
expect 404 GET /static/../../etc/passwd --path-as-is
problem not-found
expect 404 GET /static/%2e%2e/%2e%2e/etc/passwd
expect 404 GET /static/.hidden
[ "$(curl -s -o /dev/null -w '%{http_code}' -I "$BASE/")" = 200 ] || fail "HEAD /"
echo "ok: health, openapi, cluster, dashboard files; no traversal, no listing"

# ---- the catalog: models and data sets (common/catalog.h) ----------------------------------------
# The built-ins with their figures (the catalog's, which test_catalog_matches_models ties
# to model_create), one by name, 404 for a name it does not hold, and the data sets with
# where this machine has them (Fashion-MNIST at its Debian directory, a data root).
expect 200 GET /api/v1/models
[ "$(jq -r '[.models[] | select(.source == "builtin") | .name] | join(" ")' "$TMP/body")" = "mlp lenet5 cifar10_quick resnet20" ] ||
    fail "models: $(cat "$TMP/body")"
jq -e '.models[] | select(.name == "lenet5") | .parameters == 61706 and .classes == 10 and .layers == 11 and
    .input == {"channels": 1, "height": 28, "width": 28} and .flops_per_sample == 841174 and
    .memory.model_bytes > 0 and .memory.bytes_per_sample > 0 and .dataset == "fashion-mnist"' "$TMP/body" >/dev/null ||
    fail "lenet5 in /api/v1/models: $(cat "$TMP/body")"
expect 200 GET /api/v1/models/resnet20
jq -e '.name == "resnet20" and .layers == 68 and .buffers == 1376 and .input.channels == 3 and .dataset == "cifar10"' \
    "$TMP/body" >/dev/null || fail "/api/v1/models/resnet20: $(cat "$TMP/body")"
expect 404 GET /api/v1/models/vgg16
problem model-not-found
jq -r .detail "$TMP/body" | grep -q "no model vgg16 in the catalog" || fail "detail: $(cat "$TMP/body")"
expect 404 GET "/api/v1/models/a%20b"
problem model-not-found
jq -r .detail "$TMP/body" | grep -q "not a model name" || fail "detail: $(cat "$TMP/body")"
expect 200 GET /api/v1/datasets
jq -e '.datasets[] | select(.name == "fashion-mnist") | .present == true and .path == "/usr/share/datasets/fashion-mnist"
    and .format == "idx" and .classes == 10 and .train_samples == 60000 and .test_samples == 10000 and .augment == true' \
    "$TMP/body" >/dev/null || fail "fashion-mnist in /api/v1/datasets: $(cat "$TMP/body")"
[ "$(jq -r '[.datasets[].name] | join(" ")' "$TMP/body")" = "fashion-mnist mnist cifar10" ] || fail "datasets: $(cat "$TMP/body")"
jq -e '.data_roots | length >= 1' "$TMP/body" >/dev/null || fail "datasets: no data_roots: $(cat "$TMP/body")"
echo "ok: GET /api/v1/models (4 built-ins), /api/v1/models/{name} (404 model-not-found), /api/v1/datasets"

# ---- an on-demand benchmark of the hosts (the pre-flight through the API) ------------------------
# 202 at once, the round visible in GET /api/v1/cluster, then the measured speed in the
# host's benchmark and profile; bad parameters and a second round while one runs refused.
: >"$HOLD"
expect 202 POST "/api/v1/cluster/benchmark?model=lenet5" -H "$AUTH"
[ "$(header Location)" = /api/v1/cluster ] || fail "benchmark: Location $(header Location)"
host=$(jq -r '.hosts[0]' "$TMP/body")
[ "$(jq -r '"\(.model) \(.dataset) \(.hosts | length) \(.steps)"' "$TMP/body")" = "lenet5 fashion-mnist 1 8" ] || fail "benchmark answer: $(cat "$TMP/body")"
expect 409 POST /api/v1/cluster/benchmark -H "$AUTH"
problem benchmark-busy
expect 400 POST "/api/v1/cluster/benchmark?hosts=nowhere" -H "$AUTH"
problem invalid-benchmark
jq -r .detail "$TMP/body" | grep -q "hosts: nowhere is not a host of the cluster" || fail "detail: $(cat "$TMP/body")"
expect 400 POST "/api/v1/cluster/benchmark?model=vgg16" -H "$AUTH"
problem invalid-benchmark
expect 400 POST "/api/v1/cluster/benchmark?model=resnet20&dataset=mnist" -H "$AUTH"
problem invalid-benchmark
jq -r .detail "$TMP/body" | grep -q "model: resnet20 takes 3x32x32 images, dataset.name mnist has 1x28x28" || fail "detail: $(cat "$TMP/body")"
expect 400 POST "/api/v1/cluster/benchmark?hosts=,,," -H "$AUTH"
problem invalid-parameter parameter hosts
expect 401 POST /api/v1/cluster/benchmark
rm -f "$HOLD"
measured() {
    curl -s "$BASE/api/v1/cluster" | jq -e --arg h "$host" '.coordinator.hosts[] | select(.name == $h) |
        .benchmark.running == false and .benchmark.samples_per_s > 0 and .state == "up" and .devices == ["cpu"] and
        ([.speeds[] | select(.model == "lenet5" and .samples_per_s > 0 and .benchmark_time > 0)] | length == 1)'
}
await 60 "the benchmark's speed in GET /api/v1/cluster" measured
expect 200 GET /api/v1/cluster
echo "ok: POST /api/v1/cluster/benchmark: 202, busy 409, bad host/model/list 400; $host measured at $(jq -r '.coordinator.hosts[0].benchmark.samples_per_s | floor' "$TMP/body") samples/s"

# ---- routing errors ------------------------------------------------------------------------------
expect 404 GET /api/v1/nothing
problem not-found
expect 405 PUT /api/v1/jobs
problem method-not-allowed
[ "$(header Allow)" = "GET, HEAD, POST" ] || fail "405 Allow: $(header Allow)"
expect 405 POST /api/v1/jobs/j-1 -H "$AUTH"
[ "$(header Allow)" = "GET, HEAD, DELETE" ] || fail "405 Allow: $(header Allow)"
echo "ok: 404 and 405 with Allow"

# ---- submit: auth, media type, size, validation --------------------------------------------------
spec "$TMP/small.json" small 2
# Retention: the API lists the checkpoints kept and their bytes (checked after the run).
jq '.checkpoint += {"keep_last": 2, "keep_best": true}' "$TMP/small.json" >"$TMP/small.tmp" && mv "$TMP/small.tmp" "$TMP/small.json"
expect 401 POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/small.json"
problem unauthorized
header WWW-Authenticate | grep -q '^Bearer' || fail "401 without WWW-Authenticate"
expect 401 POST /api/v1/jobs -H "$JSON" -H "Authorization: Bearer wrong" --data-binary @"$TMP/small.json"
expect 415 POST /api/v1/jobs -H "$AUTH" --data-binary @"$TMP/small.json"
problem unsupported-media-type
expect 415 POST /api/v1/jobs -H "$AUTH" -H "Content-Type: text/plain" --data-binary @"$TMP/small.json"
expect 400 POST /api/v1/jobs -H "$AUTH" -H "$JSON" --data-binary '{"model": '
problem invalid-json
expect 400 POST /api/v1/jobs -H "$AUTH" -H "$JSON" \
    --data-binary '{"model": "lenet5", "dataset": {"name": "fashion-mnist"}, "optimizer": {"lr": 0}}'
problem invalid-spec field optimizer.lr
expect 400 POST /api/v1/jobs -H "$AUTH" -H "$JSON" --data-binary '{"model": "lenet5", "batch_sise": 64}'
problem invalid-spec field batch_sise
expect 400 POST /api/v1/jobs -H "$AUTH" -H "$JSON" \
    --data-binary '{"model": "lenet5", "workers": 2, "algorithm": {"name": "ssgd"}, "emulate": {"slowdown": [1, 2, 4]}}'
problem invalid-spec field emulate.slowdown
# AdamW with ddc-asgd's own momentum rule (issue 44): refused at submission, saying what to use
expect 400 POST /api/v1/jobs -H "$AUTH" -H "$JSON" \
    --data-binary '{"model": "lenet5", "workers": 2, "algorithm": {"name": "ddc-asgd"}, "optimizer": {"kind": "adamw"}}'
problem invalid-spec field optimizer.kind
jq -r .detail "$TMP/body" | grep -q "adamw is not applied by ddc-asgd, whose update is its own momentum rule; use asgd" ||
    { cat "$TMP/body"; fail "the adamw refusal does not say why"; }
head -c 2097152 /dev/zero | tr '\0' ' ' >"$TMP/big.json"
expect 413 POST /api/v1/jobs -H "$AUTH" -H "$JSON" --data-binary @"$TMP/big.json"
problem payload-too-large
expect 413 POST /api/v1/jobs -H "$AUTH" -H "$JSON" -H "Transfer-Encoding: chunked" --data-binary @"$TMP/big.json"
problem payload-too-large
[ "$(curl -s "$BASE/api/v1/jobs" | jq .total)" = 0 ] || fail "a refused request stored a job"
echo "ok: 401, 415, 400 (invalid-json, invalid-spec with field), 413 (declared and chunked); nothing stored"

# ---- a small job, start to end, followed live ------------------------------------------------------
expect 201 POST /api/v1/jobs -H "$AUTH" -H "$JSON" --data-binary @"$TMP/small.json"
id=$(jq -r .id "$TMP/body")
[ "$(header Location)" = "/api/v1/jobs/$id" ] || fail "Location: $(header Location)"
[ "$(jq -r .spec.model "$TMP/body")" = lenet5 ] || fail "201 body is not the job"
curl -sN --max-time 60 "$BASE/api/v1/jobs/$id/events" >"$TMP/sse.txt" 2>&1 &
SSE_PID=$!
EXTRA_PIDS="$EXTRA_PIDS $SSE_PID"
await 60 "job $id to succeed" is_job_state "$id" SUCCEEDED
# The stream ends by itself once the job has ended (curl exits 0, well before --max-time).
wait "$SSE_PID" || { head -20 "$TMP/sse.txt"; fail "the event stream of $id did not end cleanly"; }
head -1 "$TMP/sse.txt" | grep -q '^retry: ' || fail "the stream does not start with retry:"
grep -q '^event: state' "$TMP/sse.txt" || fail "no state event"
grep '^data: ' "$TMP/sse.txt" | sed 's/^data: //' | jq -e 'select(.type == "state" and .state == "SUCCEEDED")' >/dev/null ||
    { head -20 "$TMP/sse.txt"; fail "no SUCCEEDED state event"; }
grep -q '^id: [0-9]*-[0-9]*,[0-9]*-[0-9]*$' "$TMP/sse.txt" || fail "frame ids are not EVENTS_ID,METRICS_ID"
nmet=$(grep -c '^event: metrics' "$TMP/sse.txt")
if [ "$nmet" -eq 0 ]; then
    "$WORKER" --help | grep -q -- "--redis" ||
        skip "no metrics events and pacer-worker --help has no --redis yet: the worker does not report to Redis"
    fail "pacer-worker knows --redis but the event stream of $id carried no metrics"
fi
bad=$(grep '^data: ' "$TMP/sse.txt" | sed 's/^data: //' | jq -c 'select(.type == "metrics") |
    select((.rank | type) != "number" or (.step | type) != "number" or (.samples_per_s | type) != "number"
           or (.staleness.hist | length) != 9)' | head -3)
[ -z "$bad" ] || fail "metrics events lack rank/step/samples_per_s/staleness: $bad"
echo "ok: $id SUCCEEDED; its event stream carried $nmet metrics events and the state events, then ended"

# Reconnecting with Last-Event-ID replays what the Redis streams still hold after that id:
# from the start, every metrics record of the job, then the stream ends (the job is over).
total=$(curl -s "$BASE/api/v1/jobs/$id/metrics?limit=10000" | jq '.items | length')
curl -sN --max-time 20 -H 'Last-Event-ID: 0-0,0-0' "$BASE/api/v1/jobs/$id/events" >"$TMP/replay.txt" ||
    fail "the replayed stream of $id did not end by itself"
[ "$(grep -c '^event: metrics' "$TMP/replay.txt")" = "$total" ] ||
    fail "Last-Event-ID 0-0,0-0 replayed $(grep -c '^event: metrics' "$TMP/replay.txt") of $total metrics records"
expect 400 GET "/api/v1/jobs/$id/events" -H 'Last-Event-ID: garbage'
problem invalid-parameter parameter Last-Event-ID
echo "ok: Last-Event-ID replays all $total records; a malformed one is a 400"

# ---- reading a job ------------------------------------------------------------------------------------
expect 200 GET "/api/v1/jobs/$id"
[ "$(jq -r .state "$TMP/body")" = SUCCEEDED ] || fail "job state"
expect 404 GET /api/v1/jobs/j-999999
problem job-not-found
expect 404 GET /api/v1/jobs/not-an-id
expect 200 GET "/api/v1/jobs?state=succeeded"
[ "$(jq '.jobs | length' "$TMP/body")" -ge 1 ] || fail "list ?state=succeeded is empty"
expect 200 GET "/api/v1/jobs?state=QUEUED"
[ "$(jq .total "$TMP/body")" = 0 ] || fail "a QUEUED job in the list"
expect 400 GET "/api/v1/jobs?state=JOGGING"
problem invalid-parameter parameter state
expect 200 GET "/api/v1/jobs?limit=5000"
[ "$(jq .limit "$TMP/body")" = 1000 ] || fail "page size not capped at 1000: $(jq .limit "$TMP/body")"
expect 400 GET "/api/v1/jobs?limit=0"
problem invalid-parameter parameter limit
expect 400 GET "/api/v1/jobs?offset=-1"
expect 400 GET "/api/v1/jobs?limit=12abc"
expect 200 GET "/api/v1/jobs/$id/nodes"
at_least "nodes: rank 0 samples/s" "$(jq '.ranks[0].samples_per_s // 0' "$TMP/body")" 1
[ "$(jq '.ranks[0].staleness.hist | length' "$TMP/body")" = 9 ] || fail "nodes: no staleness histogram"
expect 200 GET "/api/v1/jobs/$id/metrics?limit=5"
[ "$(jq '.items | length' "$TMP/body")" = 5 ] || fail "metrics ?limit=5"
next=$(jq -r .next "$TMP/body")
expect 200 GET "/api/v1/jobs/$id/metrics?since=$next&limit=100000"
[ "$(jq -r '.items[0].id' "$TMP/body")" != "$next" ] || fail "metrics ?since= repeats the last record"
at_least "metrics after the first page" "$(jq '.items | length' "$TMP/body")" 5
expect 400 GET "/api/v1/jobs/$id/metrics?since=yesterday"
problem invalid-parameter parameter since
# The metric history (issue 15): at most ?points points per series (min/max per time
# bucket), covering the whole run (its first and last step records' times), every rank;
# points outside 10..5000 or not a number is a 400 naming "points".
expect 200 GET "/api/v1/jobs/$id/metrics?limit=10000"
jq '[.items[] | select(.kind == "step" and .loss != null)] | {n: length, a: (map(.time) | min), b: (map(.time) | max)}' \
    "$TMP/body" >"$TMP/steps.json"
nrec=$(jq '.items | length' "$TMP/body")
for pts in 10 5000; do
    expect 200 GET "/api/v1/jobs/$id/history?points=$pts"
    jq -e --slurpfile s "$TMP/steps.json" --argjson n "$nrec" --argjson p "$pts" '
        def near($x; $y): ($x - $y) * ($x - $y) < 1e-9;
        .points == $p and .records == $n and .next != "0" and (.truncated | not) and
        ([.series[][] | .t | length] | max) <= $p and (.job_loss.t | length) <= $p and
        ([.series[][] | (.t | length) == (.v | length)] | all) and
        near([.series.loss[].t[0]] | min; $s[0].a) and near([.series.loss[].t[-1]] | max; $s[0].b) and
        (.job_loss.t | length) > 0' "$TMP/body" >/dev/null ||
        { jq -c '{points, records, from, to, next, ranks, n: [.series.loss[] | .t | length], steps: $s[0]}' \
            --slurpfile s "$TMP/steps.json" "$TMP/body"; fail "history?points=$pts: bound, range or records wrong"; }
done
[ "$(jq '[.series.loss[].t | length] | add' "$TMP/body")" -eq "$(jq .n "$TMP/steps.json")" ] ||
    fail "history?points=5000 of a short job dropped points (nothing to downsample)"
[ "$(jq '.accuracy | length' "$TMP/body")" -ge 2 ] || fail "history: no test evaluations"
history_accuracy_is_log "$TMP/body" "history of $id (sgd)" "$STATE/jobs/$id/log"
for bad in 9 5001 abc -1; do
    expect 400 GET "/api/v1/jobs/$id/history?points=$bad"
    problem invalid-parameter parameter points
done
echo "ok: history of $id: at most 10 points per series over the whole run ($nrec records), all of them at 5000; bad points are 400s"
# What the full stream has trimmed comes from the coarse one (worker/redis_report.h): a
# short job's coarse stream holds every record; with the full stream cut to its newest
# half by hand, the history still starts at the run's first record.
rcli() { redis-cli -s "$STATE/redis.sock" "$@"; }
[ "$(rcli XLEN "pacer:job:$id:metrics:coarse")" = "$nrec" ] || fail "the coarse stream of $id lacks some of its $nrec records"
rcli XTRIM "pacer:job:$id:metrics" MAXLEN $((nrec / 2)) >/dev/null
expect 200 GET "/api/v1/jobs/$id/history?points=5000"
jq -e --slurpfile s "$TMP/steps.json" --argjson n "$nrec" '
    .records >= $n - 2 and .records <= $n and (([.series.loss[].t[0]] | min) - $s[0].a | fabs) < 1e-4 and
    ([.series.loss[].t | length] | add) == $s[0].n' "$TMP/body" >/dev/null ||
    { jq -c '{records, from, n: [.series.loss[] | .t | length]}' "$TMP/body"; fail "history after the trim lost the run's start"; }
# Answers are reused while the streams' edges stay (coordinator/jobhistory.c): the same
# answer twice; without the coarse stream, the next one has only the full stream's half.
expect 200 GET "/api/v1/jobs/$id/history?points=1000"
cp "$TMP/body" "$TMP/h1.json"
expect 200 GET "/api/v1/jobs/$id/history?points=1000"
cmp -s "$TMP/body" "$TMP/h1.json" || fail "two history answers for unchanged streams differ"
rcli DEL "pacer:job:$id:metrics:coarse" >/dev/null
expect 200 GET "/api/v1/jobs/$id/history?points=1000"
[ "$(jq .records "$TMP/body")" = "$(rcli XLEN "pacer:job:$id:metrics")" ] ||
    fail "history after the coarse stream went: $(jq .records "$TMP/body") records, not the full stream's $(rcli XLEN "pacer:job:$id:metrics")"
echo "ok: the coarse stream holds all $nrec records of $id; with the full stream trimmed, the history still covers the run; a changed stream is read again"
expect 200 GET "/api/v1/jobs/$id/logs?tail=3"
jq -r .text "$TMP/body" | grep -q "final test_accuracy" || fail "logs ?tail=3 lacks the final line"
expect 200 GET "/api/v1/jobs/$id/logs?offset=0&limit=100"
[ "$(jq -r .text "$TMP/body" | wc -c)" -le 101 ] || fail "logs ?limit=100 returned more"
expect 400 GET "/api/v1/jobs/$id/logs?tail=x"
expect 200 GET "/api/v1/jobs/$id/checkpoint"
header Content-Type | grep -q '^application/octet-stream' || fail "checkpoint type"
header Content-Disposition | grep -q "attachment; filename=\"$id-small.ckpt\"" || fail "Content-Disposition: $(header Content-Disposition)"
cmp -s "$TMP/body" "$STATE/jobs/$id/checkpoints/small.ckpt" || fail "downloaded checkpoint differs from the file"
# The kept checkpoints (keep_last 2, keep_best; 2 epochs of 32 steps): the newest first,
# the latest the final one (step 64), the best the highest accuracy, every file's bytes and
# the total (a file under two names once) as the directory has them. NAME.fence (the
# attempt fence of common/ckptdir.c, a few bytes of metadata) is no checkpoint: not listed.
expect 200 GET "/api/v1/jobs/$id"
jq .checkpoints "$TMP/body" >"$TMP/ck.json"
ckd="$STATE/jobs/$id/checkpoints"
[ "$(jq -r '.items[0] | "\(.step) \(.epoch) \(.latest)"' "$TMP/ck.json")" = "64 2 true" ] || fail "checkpoints: latest $(cat "$TMP/ck.json")"
[ "$(jq '[.items[] | select(.best)] | length' "$TMP/ck.json")" = 1 ] || fail "checkpoints: not one best: $(cat "$TMP/ck.json")"
[ "$(jq '([.items[].test_accuracy // -1] | max) == ([.items[] | select(.best)][0].test_accuracy)' "$TMP/ck.json")" = true ] \
    || fail "checkpoints: the best is not the most accurate: $(cat "$TMP/ck.json")"
want=$(ls "$ckd" | grep -v '^small.ckpt$' | grep -v '\.fence$' | sort | tr '\n' ' ')
[ "$(jq -r '.items[].file' "$TMP/ck.json" | sort | tr '\n' ' ')" = "$want" ] || fail "checkpoints: $(cat "$TMP/ck.json"), the directory has $want"
jq -r '.items[] | "\(.file) \(.bytes)"' "$TMP/ck.json" | while read -r f b; do
    [ "$(stat -c %s "$ckd/$f")" = "$b" ] || fail "checkpoints: $f has $(stat -c %s "$ckd/$f") bytes, the API says $b"
done
total=$(cd "$ckd" && ls | grep -v '\.fence$' | xargs stat -c '%i %s' | sort -u | awk '{ t += $2 } END { print t }')
[ "$(jq .total_bytes "$TMP/ck.json")" = "$total" ] || fail "checkpoints: total_bytes $(jq .total_bytes "$TMP/ck.json"), the directory $total"
echo "ok: job, list (filter, paging, cap), nodes, metrics paging, logs, checkpoint download, kept checkpoints ($(jq -c '[.items[] | [.step, .best]]' "$TMP/ck.json"), $total bytes)"

# Every per-job route answers 404 job-not-found for a job that does not exist (and for an
# id that is not one), GET and HEAD alike.
for route in "" /nodes /metrics /history /events /logs /checkpoint; do
    for jid in j-999999 not-an-id; do
        expect 404 GET "/api/v1/jobs/$jid$route" --max-time 5
        problem job-not-found
        expect 404 HEAD "/api/v1/jobs/$jid$route" --max-time 5
    done
done
expect 404 DELETE /api/v1/jobs/j-999999 -H "$AUTH"
problem job-not-found
echo "ok: 404 job-not-found from every per-job route (GET, HEAD, DELETE)"

# HEAD: the status and headers of GET.
for path in /healthz /api/v1/jobs "/api/v1/jobs/$id" "/api/v1/jobs/$id/nodes" "/api/v1/jobs/$id/metrics" "/api/v1/jobs/$id/history" \
    "/api/v1/jobs/$id/logs" "/api/v1/jobs/$id/checkpoint" /api/v1/cluster /api/v1/models /api/v1/models/lenet5 \
    /api/v1/datasets /api/v1/openapi.json /metrics / /static/app.js; do
    expect 200 HEAD "$path"
    [ -n "$(header Content-Type)" ] || fail "HEAD $path has no Content-Type"
done
header Content-Type | grep -q '^text/javascript' || fail "HEAD /static/app.js: $(header Content-Type)"
echo "ok: HEAD on every GET route: 200 with its headers"

# /api/v1/events: state events of every job (here: $id went QUEUED, RUNNING, SUCCEEDED),
# no metrics, frame ids of the pacer:events stream alone; it does not end by itself.
curl -sN --max-time 3 -H 'Last-Event-ID: 0-0' "$BASE/api/v1/events" >"$TMP/all.txt" 2>/dev/null
[ $? -eq 28 ] || fail "/api/v1/events ended by itself (it has no end)"
grep '^data: ' "$TMP/all.txt" | sed 's/^data: //' | jq -r --arg j "$id" 'select(.job == $j and .type == "state") | .state' |
    tr '\n' ' ' >"$TMP/all.states"
[ "$(cat "$TMP/all.states")" = "QUEUED RUNNING SUCCEEDED " ] || fail "/api/v1/events for $id: $(cat "$TMP/all.states")"
grep -q '^event: metrics' "$TMP/all.txt" && fail "/api/v1/events carried metrics"
grep '^id: ' "$TMP/all.txt" | grep -vq '^id: [0-9]*-[0-9]*$' && fail "/api/v1/events frame ids are not pacer:events ids"
grep '^data: ' "$TMP/all.txt" | sed 's/^data: //' | jq -e 'select((.type | type) != "string" or (.job | type) != "string" or (.time | type) != "number")' >/dev/null &&
    fail "an event of /api/v1/events lacks type, job or time"
evid=$(grep '^id: ' "$TMP/all.txt" | sed -n 2p | cut -d' ' -f2)
curl -sN --max-time 3 -H "Last-Event-ID: $evid" "$BASE/api/v1/events" >"$TMP/all2.txt" 2>/dev/null
[ "$(grep -c '^id: ' "$TMP/all2.txt")" -eq $(($(grep -c '^id: ' "$TMP/all.txt") - 2)) ] ||
    fail "/api/v1/events resumed after the second frame did not carry the rest"
echo "ok: /api/v1/events: QUEUED RUNNING SUCCEEDED of $id, no metrics, resumable by Last-Event-ID"

# ---- cancel, 409, /metrics while a job runs -------------------------------------------------------------
spec "$TMP/long.json" long 300   # cancelled below: longer than any machine takes to get there
expect 201 POST /api/v1/jobs -H "$AUTH" -H "$JSON" --data-binary @"$TMP/long.json"
id2=$(jq -r .id "$TMP/body")
expect 404 GET "/api/v1/jobs/$id2/checkpoint"
await 30 "job $id2 to run" is_job_state "$id2" RUNNING
has_ranks() { curl -s "$BASE/metrics" | grep -q "^pacer_rank_samples_per_second{job=\"$id2\",rank=\"0\"} "; }
await 20 "/metrics to show the ranks of $id2" has_ranks
expect 200 GET /metrics
header Content-Type | grep -q '^text/plain; version=0.0.4' || fail "/metrics type: $(header Content-Type)"
grep -q '^pacer_jobs{state="RUNNING"} 1$' "$TMP/body" || fail "/metrics: pacer_jobs RUNNING"
grep -q '^pacer_jobs{state="SUCCEEDED"} 1$' "$TMP/body" || fail "/metrics: pacer_jobs SUCCEEDED"
for m in pacer_rank_loss pacer_rank_batch_size pacer_rank_staleness_mean pacer_rank_staleness_p95 \
    pacer_rank_staleness_updates_total; do
    grep -q "^$m{job=\"$id2\",rank=\"0\"} " "$TMP/body" || fail "/metrics lacks $m of $id2"
done
expect 401 DELETE "/api/v1/jobs/$id2"
expect 404 DELETE /api/v1/jobs/j-999999 -H "$AUTH"

# ---- events of a running job: a stream cut mid-way and resumed with Last-Event-ID --------------------
# Stream A from the start until it has carried 5 metrics frames, then cut (as a dropped
# connection would); stream B resumes from A's last frame id and runs until the job ends.
# Together they carry every metrics record of the job exactly once, in order.
frames() { # FILE - "EVENTS_ID METRICS_ID EVENT" per frame with an id
    awk '/^id: / { id = $2 } /^event: / { ev = $2 } /^$/ { if (id != "") print id, ev; id = ""; ev = "" }' "$1" | tr ',' ' '
}
nmetrics() { [ "$(frames "$1" | awk '$3 == "metrics"' | wc -l)" -ge "$2" ]; }
curl -sN --max-time 120 -H 'Last-Event-ID: 0-0,0-0' "$BASE/api/v1/jobs/$id2/events" >"$TMP/a.txt" 2>/dev/null &
SA=$!
EXTRA_PIDS="$EXTRA_PIDS $SA"
await 30 "stream A to carry 5 metrics frames" nmetrics "$TMP/a.txt" 5
kill "$SA"
wait "$SA" 2>/dev/null
# The cut may fall inside a frame: A counts up to its last complete frame.
last=$(frames "$TMP/a.txt" | tail -1 | awk '{ print $1 "," $2 }')
na=$(frames "$TMP/a.txt" | awk '$3 == "metrics"' | wc -l)
curl -sN --max-time 120 -H "Last-Event-ID: $last" "$BASE/api/v1/jobs/$id2/events" >"$TMP/b.txt" 2>/dev/null &
SB=$!
EXTRA_PIDS="$EXTRA_PIDS $SB"
await 30 "resumed stream B to carry 3 metrics frames while $id2 runs" nmetrics "$TMP/b.txt" 3
is_job_state "$id2" RUNNING || fail "job $id2 ended before the resumed stream was checked live"

# A queued job is cancelled at once: 200, CANCELLED in the answer. It stays queued because
# it needs more slots than the machine has while $id2 holds one.
slots=$(curl -s "$BASE/api/v1/cluster" | jq .coordinator.slots)
need_number "coordinator slots" "$slots"
jq --argjson w $((slots + 1)) '.name = "queued" | .workers = $w | .algorithm = {"name": "ssgd"}' "$TMP/long.json" >"$TMP/queued.json"
expect 201 POST /api/v1/jobs -H "$AUTH" -H "$JSON" --data-binary @"$TMP/queued.json"
id3=$(jq -r .id "$TMP/body")
[ "$(job_state "$id3")" = QUEUED ] || fail "job $id3 is $(job_state "$id3"), want QUEUED"
expect 200 DELETE "/api/v1/jobs/$id3" -H "$AUTH"
[ "$(jq -r .state "$TMP/body")" = CANCELLED ] || fail "DELETE of queued $id3 answered state $(jq -r .state "$TMP/body")"
jq -e 'has("cancel_requested") | not' "$TMP/body" >/dev/null || fail "a queued job's cancel says cancel_requested"
expect 409 DELETE "/api/v1/jobs/$id3" -H "$AUTH"
echo "ok: queued job $id3 cancelled at once (200), then 409"

# A running job: 202 with cancel_requested, CANCELLED once its processes are gone.
expect 202 DELETE "/api/v1/jobs/$id2" -H "$AUTH"
[ "$(jq -r .state "$TMP/body")" = RUNNING ] || fail "202 answer for $id2 says state $(jq -r .state "$TMP/body")"
jq -e '.cancel_requested | type == "number"' "$TMP/body" >/dev/null || fail "DELETE answer lacks cancel_requested"
await 20 "job $id2 to be CANCELLED" is_job_state "$id2" CANCELLED
expect 409 DELETE "/api/v1/jobs/$id2" -H "$AUTH"
problem job-finished
echo "ok: /metrics while running, running job cancelled (202), then 409"

wait "$SB" || fail "the resumed stream of $id2 did not end by itself when the job was cancelled"
total=$(curl -s "$BASE/api/v1/jobs/$id2/metrics?limit=100000" | jq '.items | length')
nb=$(frames "$TMP/b.txt" | awk '$3 == "metrics"' | wc -l)
[ $((na + nb)) -eq "$total" ] || fail "streams A ($na) and B ($nb) carried $((na + nb)) metrics records of $total"
# Metrics ids strictly increase over A then B: nothing repeated, nothing out of order.
{ frames "$TMP/a.txt"; frames "$TMP/b.txt"; } | awk '$3 == "metrics" { split($2, p, "-"); p[1] += 0; p[2] += 0
    if (n++ && (p[1] < q1 || (p[1] == q1 && p[2] <= q2))) { print "metrics id " $2 " after " pid; bad = 1 }
    q1 = p[1]; q2 = p[2]; pid = $2 } END { exit bad }' ||
    fail "the resumed stream repeated or reordered records"
grep '^data: ' "$TMP/b.txt" | sed 's/^data: //' | jq -e 'select(.type == "state" and .state == "CANCELLED")' >/dev/null ||
    fail "the resumed stream did not carry the CANCELLED state event"
echo "ok: a stream cut after $na metrics records and resumed with Last-Event-ID $last carried the other $nb: all $total, once each, in order"

# ---- reads need the token by default, and the SSE limit ---------------------------------------------------------------------
stop_coord
# This time the token comes from a file (and not from the environment).
printf '%s\n' "$TOKEN" >"$TMP/token"
unset PACER_TOKEN
start_coord --listen 127.0.0.1:0 --sse-max 2 --token-file "$TMP/token"
export PACER_TOKEN=$TOKEN
BASE=$(base_url)
expect 401 GET /api/v1/jobs
expect 401 GET /metrics
expect 200 GET /api/v1/jobs -H "$AUTH"
expect 200 GET /healthz
expect 200 GET /
expect 401 GET /api/v1/events --max-time 2
curl -sN --max-time 30 "$BASE/api/v1/events?access_token=$TOKEN" >"$TMP/all1.txt" &
S1=$!
curl -sN --max-time 30 -H "$AUTH" "$BASE/api/v1/events" >"$TMP/all2.txt" &
S2=$!
EXTRA_PIDS="$EXTRA_PIDS $S1 $S2"
opened() { [ -s "$TMP/all1.txt" ] && [ -s "$TMP/all2.txt" ]; }
await 10 "two event streams to open" opened
expect 503 GET /api/v1/events -H "$AUTH" --max-time 5
problem too-many-streams
kill "$S1" "$S2" 2>/dev/null
echo "ok: --token-file, reads need it (401 without the token, ?access_token= for streams), 503 beyond --sse-max"
stop_coord

# ---- 503: a daemon whose Redis is dead --------------------------------------------------------------------
"$COORD" --state-dir "$TMP/dead" --redis redis://127.0.0.1:1 --listen 127.0.0.1:0 >"$TMP/coord.log" 2>&1 &
COORD_PID=$!
await 10 "the API of the daemon with a dead Redis" sh -c "grep -q 'REST API and dashboard on' '$TMP/coord.log'"
BASE=$(base_url)
expect 503 GET /healthz
[ "$(jq -r .status "$TMP/body")" = unavailable ] || fail "/healthz body when Redis is down"
expect 503 GET /api/v1/jobs -H "$AUTH"
problem redis-unavailable
expect 503 POST /api/v1/jobs -H "$AUTH" -H "$JSON" --data-binary @"$TMP/small.json"
problem redis-unavailable
expect 200 GET /metrics -H "$AUTH"
grep -q '^pacer_redis_up 0$' "$TMP/body" || fail "/metrics: pacer_redis_up 0"
kill -TERM "$COORD_PID"
wait "$COORD_PID" || fail "the daemon with a dead Redis exited $? on SIGTERM"
COORD_PID=""
echo "ok: 503 with Redis unreachable; the daemon still exits 0"

# Every answer recorded above, against the document.
python3 -c 'import jsonschema' 2>/dev/null || fail "python3-jsonschema not installed (deploy/install-deps.sh test)"
python3 tests/tools/openapi_check.py docs/openapi.json "$TMP/answers/index" || fail "answers that docs/openapi.json does not describe"
