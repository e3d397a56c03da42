# The command-line client (build/pacer) against a real coordinator (embedded Redis, a
# free port, its own state dir): submit, watch (line by line, and redrawn on a terminal
# through script(1)), ls, get, logs (whole, --tail, -f), cancel and retry, each in table
# and --json form with its exit status; retry's HTTP contract (201 + Location, 404, 409,
# 401); logs still readable after the job's processes and then the coordinator are gone;
# and the error paths: an unknown job (the API's problem detail, exit 1), a bad spec
# (the field), a missing token (401), an unreachable URL (named, exit 3), bad usage (2).
. tests/integration/coordinator_lib.inc
PACER=$BUILD/pacer
[ -x "$PACER" ] || skip "$PACER not built: libcurl missing (make deps installs libcurl4-openssl-dev)"
command -v curl >/dev/null || skip "curl not installed (make deps)"
command -v jq >/dev/null || skip "jq not installed (make deps)"
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

TOKEN=cli-token-$$
export PACER_TOKEN=$TOKEN
base_url() { grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //'; }
p() { "$PACER" "$@"; }
# spec2 FILE NAME EPOCHS - the small job on two ssgd ranks (two progress lines).
spec2() {
    cat >"$1" <<JSON
{"name": "$2", "model": "lenet5", "workers": 2, "algorithm": {"name": "ssgd"},
 "dataset": {"name": "fashion-mnist", "train_subset": 2048, "test_subset": 500},
 "optimizer": {"lr": 0.02, "momentum": 0.9},
 "batch_size": 64, "epochs": $3, "seed": 7, "log_every": 10, "checkpoint": {"every_steps": 10}}
JSON
}
job_json() { p get --json "$1" 2>/dev/null; }
pstate() { job_json "$1" | jq -r .state; }
is_pstate() { [ "$(pstate "$1")" = "$2" ]; }

# ---- usage and an unreachable coordinator, before there is one -------------------------------------
p --help >"$TMP/out" || fail "pacer --help exited $?"
for c in submit ls get watch logs cancel retry trace models datasets; do
    grep -q "^  $c" "$TMP/out" || fail "pacer --help does not list $c"
done
p logs --help | grep -q -- '-f, --follow' || fail "pacer logs --help lacks -f"
expect_error 2 "unknown command 'frobnicate'" p frobnicate
expect_error 2 "usage: pacer get ID" p get
expect_error 2 "does not apply to ls" p ls --follow
expect_error 2 "unknown option '--jsn' (did you mean --json?)" p ls --jsn
expect_error 2 "unknown command 'wacth' (did you mean watch?)" p wacth j-1
expect_error 2 "submit: --every goes with --watch" p submit x.json --every 5
expect_error 2 "must be http://" p ls --url 127.0.0.1:8080
expect_error 3 "cannot reach the coordinator at http://127.0.0.1:1" p ls --url http://127.0.0.1:1
echo "ok: help, usage errors (exit 2, a typo's closest name), an unreachable URL is named (exit 3)"

start_coord --listen 127.0.0.1:0
BASE=$(base_url)
[ -n "$BASE" ] || { cat "$TMP/coord.log"; fail "no 'REST API ... on http://' line in the log"; }
export PACER_URL=$BASE
echo "ok: coordinator on $BASE"

# ---- errors the API answers: the problem detail, exit 1 -----------------------------------------------
expect_error 1 "No such job.*(HTTP 404)" p get j-999999
p get --json j-999999 >"$TMP/out" 2>/dev/null
[ "$(jq -r .type "$TMP/out")" = urn:pacer:problem:job-not-found ] || fail "get --json: no problem document on stdout"
expect_error 1 "HTTP 404" p get ../../healthz   # the id is one path segment: no way out of /api/v1/jobs/
expect_error 1 "HTTP 404" p logs j-999999
expect_error 1 "HTTP 404" p watch j-999999
expect_error 1 "HTTP 404" p retry j-999999
expect_error 1 "parameter state" p ls --state JOGGING
printf '{"model": "lenet5", "dataset": {"name": "fashion-mnist"}, "optimizer": {"lr": 0}}' >"$TMP/bad.json"
expect_error 1 "Invalid job spec: optimizer.lr.*field optimizer.lr" p submit "$TMP/bad.json"
expect_error 2 "nothing.json" p submit "$TMP/nothing.json"
spec2 "$TMP/small.json" small 2
expect_error 1 "HTTP 401" env -u PACER_TOKEN "$PACER" submit "$TMP/small.json"
p ls >"$TMP/out" || fail "ls exited $?"
grep -qx "no jobs" "$TMP/out" || fail "ls with no jobs: $(cat "$TMP/out")"
echo "ok: 404, 400 (field, parameter), 401 print the problem detail and exit 1; nothing was stored"

# ---- the catalog: models and data sets ----------------------------------------------------------------
p models >"$TMP/out" || fail "pacer models exited $?"
head -1 "$TMP/out" | grep -q '^NAME  *SOURCE  *INPUT  *CLASSES  *PARAMS' || fail "models header: $(head -1 "$TMP/out")"
grep -q '^lenet5  *builtin  *1x28x28  *10  *61.7K  *841.2K .* fashion-mnist$' "$TMP/out" || fail "models: $(cat "$TMP/out")"
[ "$(grep -c builtin "$TMP/out")" = 4 ] || fail "models: not the 4 built-ins: $(cat "$TMP/out")"
p models resnet20 | grep -q '^layers  *68$' || fail "pacer models resnet20"
[ "$(p models --json | jq -r '.models | length')" = 4 ] || fail "models --json"
expect_error 1 "No such model: no model vgg16 in the catalog.*(HTTP 404)" p models vgg16
expect_error 1 "HTTP 404" p models ../jobs   # one path segment: no way out of /api/v1/models/
p datasets >"$TMP/out" || fail "pacer datasets exited $?"
grep -q '^fashion-mnist  *idx  *1x28x28  *10  *60000  *10000  */usr/share/datasets/fashion-mnist$' "$TMP/out" ||
    fail "datasets: $(cat "$TMP/out")"
[ "$(p datasets --json | jq -r '[.datasets[].name] | join(" ")')" = "fashion-mnist mnist cifar10" ] || fail "datasets --json"
echo "ok: models (table, one by name, --json, 404), datasets"

# ---- submit and watch (line by line) --------------------------------------------------------------------
id1=$(p submit "$TMP/small.json") || fail "submit exited $?"
echo "$id1" | grep -qx 'j-[0-9]*' || fail "submit printed '$id1', not an id"
p watch "$id1" >"$TMP/watch.txt" 2>&1 || { cat "$TMP/watch.txt"; fail "watch $id1 exited $? (want 0: SUCCEEDED)"; }
head -1 "$TMP/watch.txt" | grep -q '^RANK  ROLE  *HOST  *EPOCH  *STEP  *BATCH  *LOSS  *SAMPLES/S' ||
    { cat "$TMP/watch.txt"; fail "watch: no header line"; }
tail -1 "$TMP/watch.txt" | grep -q "^$id1 SUCCEEDED after " || { tail -5 "$TMP/watch.txt"; fail "watch: no final line"; }
for r in 0 1; do
    grep -q "^   $r  worker  " "$TMP/watch.txt" || { cat "$TMP/watch.txt"; fail "watch: no progress line of rank $r"; }
done
grep -q "^-- $id1 RUNNING" "$TMP/watch.txt" || fail "watch: no RUNNING state line"
# Into a pipe: a line per rank per epoch, not one per step record (2 epochs of 16 steps: 32
# records a rank), and never the same line twice (the final record repeats the last
# epoch's). At most one more line a rank: the node it had reported when the watch started.
lines=$(grep -c '^   [01]  worker' "$TMP/watch.txt")
[ "$lines" -ge 4 ] && [ "$lines" -le 6 ] || { cat "$TMP/watch.txt"; fail "watch into a pipe: $lines rank lines, want 4 to 6"; }
for r in 0 1; do
    for e in '1  *16' '2  *32'; do
        grep -q "^   $r  worker  .*  $e  " "$TMP/watch.txt" || { cat "$TMP/watch.txt"; fail "watch: rank $r has no line at the end of epoch/step $e"; }
    done
done
[ -z "$(sort "$TMP/watch.txt" | uniq -d)" ] || { cat "$TMP/watch.txt"; fail "watch printed a line twice: $(sort "$TMP/watch.txt" | uniq -d)"; }
echo "ok: submit printed $id1; watch showed $lines rank lines (one a rank an epoch, no duplicate) and exited 0"

# A watch of a finished job ends at once with its state; --json is the API's events, one a line.
p watch --json "$id1" >"$TMP/watch.json" || fail "watch --json of a finished job exited $?"
jq -e -s 'length >= 1 and .[0].type == "state" and .[0].state == "SUCCEEDED"' "$TMP/watch.json" >/dev/null ||
    { cat "$TMP/watch.json"; fail "watch --json: not the state event"; }
# On a terminal the view is redrawn in place (cursor up, erase line), ending with the same line.
if command -v script >/dev/null; then
    script -qfec "stty cols 120 rows 30; $PACER watch $id1" /dev/null >"$TMP/tty.txt" 2>&1 </dev/null ||
        { cat -v "$TMP/tty.txt"; fail "watch on a terminal exited $?"; }
    grep -q "$(printf '\033')\[2K" "$TMP/tty.txt" || { cat -v "$TMP/tty.txt"; fail "watch on a terminal: no redraw"; }
    grep -q "RANK  ROLE.*AGE" "$TMP/tty.txt" || fail "watch on a terminal: no AGE column"
    grep -q "$id1 SUCCEEDED after" "$TMP/tty.txt" || fail "watch on a terminal: no final line"
    echo "ok: watch on a terminal redraws in place"
fi

# ---- ls and get, tables and JSON -------------------------------------------------------------------------
p ls >"$TMP/ls.txt" || fail "ls exited $?"
head -1 "$TMP/ls.txt" | grep -q '^ID  *STATE  *NAME  *OWNER  *MODEL  *ALGORITHM  *WORKERS  *AGE  *RAN  *RESTARTS  *REASON$' ||
    { cat "$TMP/ls.txt"; fail "ls: header"; }
grep -q "^$id1  *SUCCEEDED  *small  *admin  *lenet5  *ssgd  *2 " "$TMP/ls.txt" || { cat "$TMP/ls.txt"; fail "ls: the row of $id1"; }
[ "$(p ls --json | jq -r '"\(.total) \(.jobs[0].id) \(.jobs[0].state)"')" = "1 $id1 SUCCEEDED" ] ||
    fail "ls --json: $(p ls --json)"
p ls --state queued | grep -qx "no jobs" || fail "ls --state queued lists something"
p get "$id1" >"$TMP/get.txt" || fail "get exited $?"
grep -q "^state  *SUCCEEDED$" "$TMP/get.txt" || { cat "$TMP/get.txt"; fail "get: state"; }
grep -q "^model  *lenet5, ssgd, 2 workers$" "$TMP/get.txt" || { cat "$TMP/get.txt"; fail "get: model"; }
grep -q "^result  *test accuracy 0\.[0-9]*" "$TMP/get.txt" || { cat "$TMP/get.txt"; fail "get: result"; }
grep -q "^checkpoints  *$(job_json "$id1" | jq -r '.checkpoints.items | length') kept, " "$TMP/get.txt" \
    && grep -q "^  *step 32 (2 epochs done), .*, latest" "$TMP/get.txt" || { cat "$TMP/get.txt"; fail "get: the kept checkpoints"; }
# every value in one column, whatever the key (docs/CLI.md)
awk 'substr($0, 15, 1) != " " || substr($0, 16, 1) == " " { bad = bad $0 "\n" } END { if (bad) { printf "%s", bad; exit 1 } }' \
    "$TMP/get.txt" || { cat "$TMP/get.txt"; fail "get: a value out of its column"; }
[ "$(job_json "$id1" | jq -r '.spec.workers')" = 2 ] || fail "get --json: no spec"
echo "ok: ls (table, --json, --state) and get (detail, --json)"

# ---- logs: whole, tail, JSON pages -----------------------------------------------------------------------
p logs "$id1" >"$TMP/log.txt" || fail "logs exited $?"
cmp -s "$TMP/log.txt" "$STATE/jobs/$id1/log" || fail "logs $id1 is not the log file"
[ "$(p logs --tail 1 "$id1")" = "$(tail -1 "$STATE/jobs/$id1/log")" ] || fail "logs --tail 1"
p logs --tail 1 "$id1" | grep -q "final test_accuracy" || fail "logs --tail 1: not the final line"
p logs --json "$id1" | jq -e -s "length >= 1 and .[0].job == \"$id1\" and (.[0].text | length) > 0" >/dev/null ||
    fail "logs --json"
echo "ok: logs $id1 ($(wc -l <"$TMP/log.txt") lines, the file itself), --tail, --json"

# ---- retry: the CLI and the HTTP contract ------------------------------------------------------------------
p retry --watch "$id1" >"$TMP/retry.txt" 2>&1 || { cat "$TMP/retry.txt"; fail "retry --watch exited $?"; }
id2=$(head -1 "$TMP/retry.txt")
echo "$id2" | grep -qx 'j-[0-9]*' && [ "$id2" != "$id1" ] || { cat "$TMP/retry.txt"; fail "retry printed '$id2'"; }
tail -1 "$TMP/retry.txt" | grep -q "^$id2 SUCCEEDED" || { tail -3 "$TMP/retry.txt"; fail "retry --watch: no final line"; }
[ "$(job_json "$id2" | jq -r .parent)" = "$id1" ] || fail "the retry $id2 does not name $id1 as its parent"
[ "$(job_json "$id1" | jq -c .retries)" = "[\"$id2\"]" ] || fail "$id1 does not list $id2 in retries"
job_json "$id1" | jq -S .spec >"$TMP/spec1.json"
job_json "$id2" | jq -S .spec >"$TMP/spec2.json"
cmp -s "$TMP/spec1.json" "$TMP/spec2.json" || fail "the retry's spec differs from its parent's"
p get "$id2" | grep -q "^parent  *$id1$" || fail "get $id2: no parent line"
p get "$id1" | grep -q "^retries  *$id2$" || fail "get $id1: no retries line"
code=$(curl -s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
    "$BASE/api/v1/jobs/$id1/retry")
[ "$code" = 201 ] || { cat "$TMP/body"; fail "POST retry: HTTP $code"; }
id3=$(jq -r .id "$TMP/body")
grep -qi "^Location: /api/v1/jobs/$id3" "$TMP/hdr" || { cat "$TMP/hdr"; fail "POST retry: Location"; }
[ "$(jq -r .parent "$TMP/body")" = "$id1" ] || fail "POST retry: the 201 body is not the new job"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/api/v1/jobs/$id1/retry")
[ "$code" = 401 ] || fail "POST retry without the token: HTTP $code"
code=$(curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" "$BASE/api/v1/jobs/j-999999/retry")
[ "$code" = 404 ] && [ "$(jq -r .type "$TMP/body")" = urn:pacer:problem:job-not-found ] || fail "POST retry unknown: $code"
expect_error 1 "The job has not finished: job $id3 is .*(HTTP 409)" p retry "$id3"
echo "ok: retry --watch ran $id2 (parent $id1, same spec); POST retry 201 + Location, 401, 404, 409"

# ---- cancel, with logs -f following ------------------------------------------------------------------------
# $id3 is queued or already running: cancelled at once (200) or on request (202).
p cancel "$id3" >"$TMP/cancel.txt" || fail "cancel $id3 exited $?"
grep -Eq "^$id3: (CANCELLED|cancel requested)" "$TMP/cancel.txt" || fail "cancel: $(cat "$TMP/cancel.txt")"
spec2 "$TMP/long.json" long 30
id4=$(p submit "$TMP/long.json") || fail "submit long exited $?"
p logs -f "$id4" >"$TMP/follow.txt" 2>&1 &
FOLLOW=$!
EXTRA_PIDS="$EXTRA_PIDS $FOLLOW"
has_steps() { job_json "$id4" >/dev/null && curl -s -H "Authorization: Bearer $TOKEN" "$BASE/api/v1/jobs/$id4/nodes" | jq -e '.ranks[0].step > 0' >/dev/null; }
await 60 "job $id4 to train" has_steps
p cancel "$id4" >"$TMP/cancel.txt" || fail "cancel exited $?"
grep -q "^$id4: cancel requested" "$TMP/cancel.txt" || fail "cancel: $(cat "$TMP/cancel.txt")"
p watch "$id4" >"$TMP/watch4.txt" 2>&1
rc=$?
[ $rc = 5 ] || { tail -5 "$TMP/watch4.txt"; fail "watch of a cancelled job exited $rc, want 5"; }
tail -1 "$TMP/watch4.txt" | grep -q "^$id4 CANCELLED" || fail "watch: $(tail -1 "$TMP/watch4.txt")"
wait "$FOLLOW"
rc=$?
[ $rc = 5 ] || { tail -5 "$TMP/follow.txt"; fail "logs -f of a cancelled job exited $rc, want 5"; }
grep -q "=== pacer-coordinator .* job $id4 attempt 1" "$TMP/follow.txt" || fail "logs -f missed the log's start"
cmp -s "$TMP/follow.txt" "$STATE/jobs/$id4/log" || fail "logs -f did not print the whole log, once"
expect_error 1 "job $id4 has already finished (CANCELLED) (HTTP 409)" p cancel "$id4"
p cancel --json "$id4" 2>/dev/null | jq -e '.status == 409' >/dev/null || fail "cancel --json: no problem document"
echo "ok: cancel (requested while running), watch exit 5, logs -f exit 5 with the whole log, then 409"

# ---- trace: the client side (the endpoint may not exist yet: then its 404 is printed) ------------------------
if curl -s -H "Authorization: Bearer $TOKEN" "$BASE/api/v1/openapi.json" | jq -e '.paths["/api/v1/jobs/{id}/trace"]' >/dev/null; then
    p trace "$id1" -o "$TMP/trace.json" || fail "trace exited $?"
    jq -e . "$TMP/trace.json" >/dev/null || fail "trace: not JSON"
    echo "ok: trace wrote $(wc -c <"$TMP/trace.json") bytes"
else
    expect_error 1 "Not Found: no such endpoint.*(HTTP 404)" p trace "$id1" -o "$TMP/trace.json"
    [ ! -e "$TMP/trace.json" ] && [ -z "$(ls "$TMP" | grep 'trace.json.part')" ] || fail "trace left a file behind"
    echo "ok: trace prints the 404's problem detail and writes no file (no trace endpoint yet)"
fi
expect_error 1 "HTTP 404" p trace j-999999 -o "$TMP/t2.json"

# ---- after the coordinator: unreachable, then logs from a new one -------------------------------------------
stop_coord
expect_error 3 "cannot reach the coordinator at $BASE" p ls
start_coord --listen 127.0.0.1:0
export PACER_URL=$(base_url)
p logs "$id1" >"$TMP/log2.txt" || fail "logs after a coordinator restart exited $?"
cmp -s "$TMP/log2.txt" "$TMP/log.txt" || fail "logs after a coordinator restart differ"
p logs --tail 2 "$id4" | grep -q . || fail "logs of the cancelled job after a restart"
echo "ok: a stopped coordinator is named (exit 3); the logs of finished jobs are served by the next one"
stop_coord

# ---- export of a job that failed before training (issue 42): why there is no model, not "will write" ------
# A data root holding a folder of empty IDX files: the spec passes the API (the files are
# there, datasets_builtin.sh), the worker reads no images from them.
mkdir -p "$TMP/root/empty"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    : >"$TMP/root/empty/$f"
done
start_coord --listen 127.0.0.1:0 --data-root "$TMP/root"
export PACER_URL=$(base_url)
printf '{"name": "nodata", "model": "lenet5", "epochs": 1, "dataset": {"name": "fashion-mnist", "path": "%s"}}' \
    "$TMP/root/empty" >"$TMP/nodata.json"
id5=$(p submit "$TMP/nodata.json") || fail "submit nodata exited $?"
await 120 "job $id5 to fail" is_pstate "$id5" FAILED
p get "$id5" | grep -q "^data  *fashion-mnist, 1 epoch, batch 64$" || { p get "$id5"; fail "get: not '1 epoch'"; }
expect_error 1 "pacer export: job $id5 failed before its first checkpoint (.*truncated.*), so it has no trained model to export" \
    p export "$id5" -o "$TMP/nodata.onnx"
grep -q "with each checkpoint" "$TMP/out" && fail "export of a failed job still says its worker will write the model"
[ ! -e "$TMP/nodata.onnx" ] || fail "export of a job without a model left a file"
p export --json "$id5" -o "$TMP/nodata.onnx" 2>/dev/null | jq -e '.type == "urn:pacer:problem:no-model"' >/dev/null ||
    fail "export --json: not the API's problem document"
echo "ok: export of $id5 (FAILED before a checkpoint) says why it has no model; get says '1 epoch'"
stop_coord
