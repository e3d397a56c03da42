# Uploaded models through the service (issue 25): PUT /api/v1/models/{name} with an ONNX
# file exported by PyTorch at test time (tests/tools/onnx_export.py --mnist) answers 201
# with its summary (the validator is `pacer-worker --check-onnx`), the catalog lists it, a
# REST job naming it ({"onnx": NAME}) trains to SUCCEEDED, and the refusals name what is
# wrong: a Softplus 422, bytes that are not ONNX 400, a body over --max-model-bytes 413, a
# built-in name 409, a write without the token 401, a model a queued job uses 409 on
# DELETE. DELETE answers 204, then 404. The dashboard uploads from its new-job form, and a
# job's page shows the model's summary (tests/browser/upload.mjs, when Chromium and
# playwright-core are there). The upload survives a restart of the coordinator;
# a rank that cannot open the stored file reads the bytes from Redis (pacer:model:SHA256)
# and the job still trains: the no-shared-file-system path. First the worker alone: an
# upload's bytes by hash from --models-dir, trained and exported (--export-onnx), bytes of
# another hash and a missing store refused; --check-onnx's exit statuses.
# Issue 42: hostile files written at test time (tests/tools/onnx_hostile.py: a Pad of 8000
# before a Conv, a Conv with pads 8000, 150000 empty initializers, 3000 nested If
# subgraphs) are refused by --check-onnx (exit 2, the reason, peak RSS under 512 MB) and by
# the API (422, the reason); files of STATE/models that no index entry names (a crash in
# the middle of an upload) are removed at the next start, and the log says so; a validator
# ended by a signal (a crash, its address-space limit) is a 422 naming the signal.
. tests/integration/coordinator_lib.inc
need_dir "$PACER_SHARED/datasets/mnist" "MNIST"
command -v curl >/dev/null || skip "curl not installed (make deps)"
$TORCH_PY tests/tools/onnx_export.py --mnist "$TMP" >"$TMP/export.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "torch/onnx not importable by /usr/bin/python3 ($(tail -1 "$TMP/export.log"))"
[ $rc -eq 0 ] || { cat "$TMP/export.log"; fail "tests/tools/onnx_export.py --mnist exited $rc"; }

TOKEN=test-token-$$
export PACER_TOKEN=$TOKEN
AUTH="Authorization: Bearer $TOKEN"
OCTET="Content-Type: application/octet-stream"
# --max-model-bytes: the test's model (~32 KB) and the hostile files (up to 300 KB) fit,
# 1.2 MB of zeros do not; --host-memory-mb: the validator's memory bound
start_coord --max-model-bytes 1000000 --host-memory-mb 2048
BASE=$(api_base)

# req METHOD PATH [CURL ARGS...] - prints the status; the body in $TMP/body.
req() {
    m=$1 p=$2
    shift 2
    curl -s -o "$TMP/body" -w '%{http_code}' -X "$m" "$@" "$BASE$p"
}
# expect STATUS WHAT METHOD PATH [CURL ARGS...]
expect() {
    want=$1 what=$2
    shift 2
    got=$(req "$@")
    [ "$got" = "$want" ] || { cat "$TMP/body"; fail "$what: HTTP $got, want $want"; }
    echo "ok: $what: $want $(jq -r '.detail // empty' "$TMP/body" 2>/dev/null | head -c 160)"
}
# ended ID - the job has ended (its state is terminal)
ended() { s=$(state_of "$1"); [ "$s" = SUCCEEDED ] || [ "$s" = FAILED ] || [ "$s" = CANCELLED ]; }
# job NAME MODEL-NAME > FILE: a short MNIST job naming an uploaded model
job() {
    jq -n --arg n "$1" --arg m "$2" \
        '{name: $n, model: {onnx: $m}, dataset: {name: "mnist", train_subset: 256, test_subset: 128},
          algorithm: {name: "sgd"}, workers: 1, batch_size: 32, epochs: 1, seed: 3, device: "cpu",
          optimizer: {lr: 0.05, momentum: 0.9}, log_every: 4}'
}
submit_rest() {
    req POST /api/v1/jobs -H "$AUTH" -H "Content-Type: application/json" --data-binary "@$1" >"$TMP/code"
    [ "$(cat "$TMP/code")" = 201 ] || { cat "$TMP/body"; fail "POST /api/v1/jobs $1: HTTP $(cat "$TMP/code")"; }
    jq -r .id "$TMP/body"
}

# ---- the worker alone: an upload's bytes by hash (--models-dir), checked, exported back -----
SHA=$(sha256sum "$TMP/mnist_cnn.onnx" | cut -d' ' -f1)
mkdir -p "$TMP/store" "$TMP/bad"
cp "$TMP/mnist_cnn.onnx" "$TMP/store/$SHA.onnx"
cp "$TMP/mnist_softplus.onnx" "$TMP/bad/$SHA.onnx"
jq -n --arg sha "$SHA" --arg p "$PACER_SHARED/datasets/mnist" \
    '{model: {onnx: "cnn", sha256: $sha}, dataset: {name: "mnist", path: $p, train_subset: 128, test_subset: 64},
      algorithm: {name: "sgd"}, workers: 1, batch_size: 32, epochs: 1, seed: 3, device: "cpu", log_every: 2}' >"$TMP/w.json"
$WORKER --spec "$TMP/w.json" --models-dir "$TMP/store" --export-onnx "$TMP/exported.onnx" >"$TMP/w.log" 2>&1 ||
    { tail -5 "$TMP/w.log"; fail "pacer-worker on an upload's bytes (--models-dir) failed"; }
[ -s "$TMP/exported.onnx" ] || fail "--export-onnx of an uploaded model wrote nothing"
grep -q "^training cnn on mnist" "$TMP/w.log" || { head -3 "$TMP/w.log"; fail "the worker does not name the upload"; }
echo "ok: the worker trains an upload read by hash from --models-dir and exports it"
expect_error 2 "the bytes from $TMP/bad/$SHA.onnx hash to" $WORKER --spec "$TMP/w.json" --models-dir "$TMP/bad"
expect_error 2 "no --redis to fetch it from" $WORKER --spec "$TMP/w.json"
expect_error 3 "not an ONNX model" $WORKER --check-onnx "$TMP/w.json"
expect_error 2 "operator Softplus is not supported" $WORKER --check-onnx "$TMP/mnist_softplus.onnx"
expect_error 2 "check-memory-mb 0: must be a size in MiB" $WORKER --check-onnx "$TMP/mnist_cnn.onnx" --check-memory-mb 0

# ---- hostile files: refused from their declared shapes and counts, in bounded memory ------
mkdir -p "$TMP/hostile"
$TORCH_PY tests/tools/onnx_hostile.py "$TMP/hostile" || fail "tests/tools/onnx_hostile.py failed"
# hostile FILE REASON: the file and the reason --check-onnx and the API give
hostile() {
    case $1 in
    pad8000 | convpads8000) echo "node 'Conv_c' (Conv): the model needs 73303 MiB or more at batch 1" ;;
    empty_inits) echo "GraphProto.initializer: more than 100000 entries" ;;
    nested_if) echo "messages nest deeper than the bound of 32" ;;
    esac
}
for h in pad8000 convpads8000 empty_inits nested_if; do
    why=$(hostile $h)
    /usr/bin/time -f "peak %M" -o "$TMP/time.out" $WORKER --check-onnx "$TMP/hostile/$h.onnx" --check-memory-mb 1024 \
        >"$TMP/check.out" 2>&1
    rc=$?
    [ $rc -eq 2 ] || { cat "$TMP/check.out"; fail "--check-onnx $h.onnx exited $rc, want 2"; }
    grep -qF "$why" "$TMP/check.out" || { cat "$TMP/check.out"; fail "--check-onnx $h.onnx does not say: $why"; }
    peak=$(sed -n 's/^peak \([0-9]*\)$/\1/p' "$TMP/time.out")
    need_number "$h.onnx: peak RSS" "$peak"
    [ "$peak" -lt 524288 ] || fail "--check-onnx $h.onnx: peak RSS $peak KB, want under 512 MB"
    echo "ok: --check-onnx $h.onnx: exit 2, peak RSS $peak KB: $(head -c 160 "$TMP/check.out")"
done
expect_error 2 "more than the memory bound of 1024 MiB" $WORKER --check-onnx "$TMP/hostile/pad8000.onnx" \
    --check-memory-mb 1024

# ---- upload: 201 with the summary, the same bytes again 200 ------------------------------
expect 201 "PUT a new model" PUT /api/v1/models/cnn -H "$AUTH" -H "$OCTET" --data-binary "@$TMP/mnist_cnn.onnx"
cp "$TMP/body" "$TMP/put.json"
[ "$(jq -r .sha256 "$TMP/put.json")" = "$SHA" ] || { cat "$TMP/put.json"; fail "sha256 is not the file's"; }
[ "$(jq -c .input "$TMP/put.json")" = "[1,28,28]" ] || fail "input: $(jq -c .input "$TMP/put.json")"
equals_num "classes" "$(jq -r .classes "$TMP/put.json")" 10
[ "$(jq -r '.name + " " + .source' "$TMP/put.json")" = "cnn uploaded" ] || fail "name/source: $(cat "$TMP/put.json")"
need_number "parameters" "$(jq -r .parameters "$TMP/put.json")"
need_number "flops_per_sample" "$(jq -r .flops_per_sample "$TMP/put.json")"
[ -s "$STATE/models/$SHA.onnx" ] || fail "not stored as STATE/models/SHA256.onnx"
redis-cli -s "$STATE/redis.sock" --raw EXISTS "pacer:model:$SHA" | grep -qx 1 || fail "pacer:model:SHA256 not in Redis"
expect 200 "PUT the same name again (replaced)" PUT /api/v1/models/cnn -H "$AUTH" -H "$OCTET" \
    --data-binary "@$TMP/mnist_cnn.onnx"

# ---- listed and described like a built-in ------------------------------------------------
expect 200 "GET /api/v1/models" GET /api/v1/models -H "$AUTH"
[ "$(jq -r '[.models[] | select(.name == "cnn" and .source == "uploaded")] | length' "$TMP/body")" = 1 ] ||
    fail "cnn is not listed as uploaded"
jq -e '.models[] | select(.name == "lenet5" and .source == "builtin")' "$TMP/body" >/dev/null || fail "built-ins not listed"
expect 200 "GET /api/v1/models/cnn" GET /api/v1/models/cnn -H "$AUTH"
[ "$(jq -r .sha256 "$TMP/body")" = "$SHA" ] || fail "GET cnn: sha256 $(jq -r .sha256 "$TMP/body")"
equals_num "GET cnn: parameters" "$(jq -r .parameters "$TMP/body")" "$(jq -r .parameters "$TMP/put.json")"

# ---- refusals --------------------------------------------------------------------------------
expect 401 "PUT without the token" PUT /api/v1/models/x -H "$OCTET" --data-binary "@$TMP/mnist_cnn.onnx"
expect 415 "PUT as JSON" PUT /api/v1/models/x -H "$AUTH" -H "Content-Type: application/json" --data-binary '{}'
expect 422 "PUT a Softplus" PUT /api/v1/models/soft -H "$AUTH" -H "$OCTET" --data-binary "@$TMP/mnist_softplus.onnx"
grep -q "operator Softplus is not supported" "$TMP/body" || { cat "$TMP/body"; fail "the 422 does not name Softplus"; }
grep -q "/Softplus" "$TMP/body" || { cat "$TMP/body"; fail "the 422 does not name the node"; }
echo "not a model" >"$TMP/text.onnx"
expect 400 "PUT text" PUT /api/v1/models/text -H "$AUTH" -H "$OCTET" --data-binary "@$TMP/text.onnx"
grep -q "not an ONNX model" "$TMP/body" || { cat "$TMP/body"; fail "the 400 does not say it is not ONNX"; }
for h in pad8000 convpads8000 empty_inits nested_if; do
    expect 422 "PUT $h.onnx" PUT /api/v1/models/$h -H "$AUTH" -H "$OCTET" --data-binary "@$TMP/hostile/$h.onnx"
    grep -qF "$(hostile $h)" "$TMP/body" || { cat "$TMP/body"; fail "the 422 for $h.onnx does not say: $(hostile $h)"; }
done
expect 422 "PUT pad8000.onnx (the bound is --host-memory-mb)" PUT /api/v1/models/pad -H "$AUTH" -H "$OCTET" \
    --data-binary "@$TMP/hostile/pad8000.onnx"
grep -qF "memory bound of 2048 MiB" "$TMP/body" || { cat "$TMP/body"; fail "the 422 does not name the bound"; }
coord_alive || fail "the coordinator died on the hostile uploads"
head -c 1200000 /dev/zero >"$TMP/big.onnx"
expect 413 "PUT over --max-model-bytes" PUT /api/v1/models/big -H "$AUTH" -H "$OCTET" --data-binary "@$TMP/big.onnx"
expect 409 "PUT a built-in name" PUT /api/v1/models/lenet5 -H "$AUTH" -H "$OCTET" --data-binary "@$TMP/mnist_cnn.onnx"
expect 409 "DELETE a built-in" DELETE /api/v1/models/lenet5 -H "$AUTH"
expect 404 "DELETE an unknown model" DELETE /api/v1/models/nosuch -H "$AUTH"
expect 404 "GET the refused upload" GET /api/v1/models/soft -H "$AUTH"
ls "$STATE/models/" | grep -v -e "^$SHA.onnx\$" -e "^$SHA.params.json\$" -e '^index.json$' &&
    fail "refused bytes were kept in STATE/models"
# a REST spec naming a model that was never uploaded: 400 naming it
job j x >"$TMP/nosuch.json"
jq '.model.onnx = "nosuch"' "$TMP/nosuch.json" >"$TMP/nosuch2.json"
expect 400 "POST a job naming no uploaded model" POST /api/v1/jobs -H "$AUTH" -H "Content-Type: application/json" \
    --data-binary "@$TMP/nosuch2.json"
grep -q "nosuch is not an uploaded model" "$TMP/body" || { cat "$TMP/body"; fail "the 400 does not name the model"; }

# ---- a job naming it trains; DELETE is refused while it is queued or running ---------------
job up1 cnn >"$TMP/up1.json"
id=$(submit_rest "$TMP/up1.json")
[ "$(jq -r .spec.model.sha256 "$TMP/body")" = "$SHA" ] || { cat "$TMP/body"; fail "the job's spec does not pin the sha256"; }
if ! ended "$id"; then
    code=$(req DELETE /api/v1/models/cnn -H "$AUTH")
    # the job may have ended in between: then 204 is right, and the model is uploaded again
    if [ "$code" = 409 ]; then
        grep -q "used by job $id" "$TMP/body" || { cat "$TMP/body"; fail "the 409 does not name the job"; }
        echo "ok: DELETE while job $id uses it: 409"
    fi
fi
await 120 "job $id (uploaded model) to end" ended "$id"
[ "$(state_of "$id")" = SUCCEEDED ] || { tail -20 "$STATE/jobs/$id/log"; fail "job $id: $(state_of "$id")"; }
grep -q -- "--models-dir $STATE/models" "$STATE/jobs/$id/log" || grep -q -- "--models-dir" "$STATE/jobs/$id/log" ||
    echo "note: the log header does not show --models-dir"
grep -q "read from Redis" "$STATE/jobs/$id/log" && fail "job $id read the model from Redis though the file was there"
echo "ok: job $id trained the uploaded model: $(grep -m1 '^training' "$STATE/jobs/$id/log")"

# ---- freeze and lora.targets: checked at submission against the model's parameter names ----
# The upload's names, as --check-onnx listed them, are kept beside its bytes; a glob that
# matches none is 400 naming the field, the glob and the model, for an upload and a
# built-in alike; globs that match are accepted (the job is then cancelled: its training
# is freeze.sh's and lora.sh's). Without kept names (an upload from before they were
# recorded) the check is left to the worker: accepted; the coordinator's next start lists
# them (below, at the restart).
NAMES="$STATE/models/$SHA.params.json"
[ -s "$NAMES" ] || fail "no parameter names kept beside the upload ($NAMES)"
pname=$(jq -r '.parameter_names[0]' "$NAMES")
prod=$(jq -r '.parameter_names[.product_weights[0]]' "$NAMES")
[ "$pname" != null ] && [ "$prod" != null ] || fail "the kept names: $(cat "$NAMES")"
# post FILE WANT WHAT [TEXT]: POST /api/v1/jobs answers WANT, its detail holding TEXT; an
# accepted job is cancelled and awaited
post() {
    code=$(req POST /api/v1/jobs -H "$AUTH" -H "Content-Type: application/json" --data-binary "@$1")
    [ "$code" = "$2" ] || { cat "$TMP/body"; fail "$3: HTTP $code, want $2"; }
    [ -z "${4:-}" ] || grep -qF "$4" "$TMP/body" || { cat "$TMP/body"; fail "$3: the $2 does not say: $4"; }
    echo "ok: $3: $2 $(jq -r '.detail // .id' "$TMP/body" | head -c 200)"
    [ "$code" = 201 ] || return 0
    cid=$(jq -r .id "$TMP/body")
    cli cancel "$cid" >/dev/null 2>&1
    await 60 "job $cid to end" ended "$cid"
}
job glob cnn | jq '.freeze = ["nosuch.*"]' >"$TMP/g1.json"
post "$TMP/g1.json" 400 "freeze matching no parameter of the upload" \
    'freeze: \"nosuch.*\" matches no parameter of model cnn ('
[ "$(jq -r .field "$TMP/body")" = freeze ] || { cat "$TMP/body"; fail "the 400's field is not freeze"; }
job glob cnn | jq --arg w "$prod" '.lora = {targets: [$w, "nosuch"]}' >"$TMP/g2.json"
post "$TMP/g2.json" 400 "lora.targets matching no product's weight of the upload" \
    "lora.targets: \\\"nosuch\\\" matches no matrix product's weight of model cnn"
job glob cnn | jq --arg p "$pname" --arg w "$prod" '.freeze = [$p] | .lora = {targets: [$w]}' >"$TMP/g3.json"
post "$TMP/g3.json" 201 "freeze and lora.targets matching the upload's names"
jq -n '{name: "glob", model: "lenet5", dataset: {name: "mnist", train_subset: 64, test_subset: 64}, workers: 1,
        epochs: 1, device: "cpu", freeze: ["conv1.*", "transformer.h.9.*"]}' >"$TMP/g4.json"
post "$TMP/g4.json" 400 "freeze matching no parameter of built-in lenet5" \
    'freeze: \"transformer.h.9.*\" matches no parameter of model lenet5 ('
jq '.freeze = ["conv1.*"] | .lora = {targets: ["*"]}' "$TMP/g4.json" >"$TMP/g5.json"
post "$TMP/g5.json" 201 "freeze and lora.targets matching lenet5's names"
mv "$NAMES" "$TMP/names.json"
post "$TMP/g1.json" 201 "an upload without kept names: its globs left to the worker"
mv "$TMP/names.json" "$NAMES"

# ---- a simulated job on the upload: pacer-sim reads it from --models-dir, as its ranks do ----
if command -v smpirun >/dev/null 2>&1 && [ -x "${SMPI_BUILD:-build-smpi}/pacer-worker" ]; then
    job sim cnn | jq '.workers = 2 | .algorithm.name = "ssgd" | .simulate = {enabled: true, slowdown: [1, 2]}' \
        >"$TMP/sim.json"
    id=$(submit_rest "$TMP/sim.json")
    await 120 "simulated job $id (uploaded model) to end" ended "$id"
    [ "$(state_of "$id")" = SUCCEEDED ] || { tail -20 "$STATE/jobs/$id/log"; fail "simulated job $id: $(state_of "$id")"; }
    req GET "/api/v1/jobs/$id" -H "$AUTH" >/dev/null
    [ "$(jq -r '.simulated' "$TMP/body")" = true ] || fail "job $id is not marked simulated: $(cat "$TMP/body")"
    need_number "simulated job $id's test accuracy" "$(jq -r '.summary.test_accuracy' "$TMP/body")"
    echo "ok: simulated job $id trained the uploaded model (pacer-sim --models-dir)"
else
    echo "note: no smpirun or ${SMPI_BUILD:-build-smpi}/pacer-worker (make smpi): the simulated job on an upload not run"
fi

# ---- no shared file system: the stored file is gone, the rank reads Redis -------------------
expect 200 "PUT again" PUT /api/v1/models/cnn -H "$AUTH" -H "$OCTET" --data-binary "@$TMP/mnist_cnn.onnx"
mv "$STATE/models/$SHA.onnx" "$TMP/moved.onnx"
job up2 cnn >"$TMP/up2.json"
id=$(submit_rest "$TMP/up2.json")
await 120 "job $id (model from Redis) to end" ended "$id"
[ "$(state_of "$id")" = SUCCEEDED ] || { tail -20 "$STATE/jobs/$id/log"; fail "job $id: $(state_of "$id")"; }
grep -q "uploaded model cnn: read from Redis" "$STATE/jobs/$id/log" ||
    { tail -20 "$STATE/jobs/$id/log"; fail "job $id does not say it read the model from Redis"; }
echo "ok: job $id trained without the stored file: $(grep -m1 'read from Redis' "$STATE/jobs/$id/log")"
# bytes that do not hash to the spec's sha256 are refused by the rank
mv "$TMP/moved.onnx" "$STATE/models/$SHA.onnx"

# ---- the dashboard: upload from the new-job form, a job on it, its page's summary ----------
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ] && command -v node >/dev/null && [ -d tests/browser/node_modules/playwright-core ]; then
    CHROMIUM=$CHROMIUM timeout 120 node tests/browser/upload.mjs "$BASE" "$TOKEN" "$TMP/mnist_cnn.onnx" "$SHA" ||
        { tail -20 "$TMP/coord.log"; fail "the dashboard's upload failed"; }
    ui=$(curl -s -H "$AUTH" "$BASE/api/v1/jobs?limit=10" | jq -r '[.jobs[] | select(.name == "ui-upload")][0].id')
    await 120 "job $ui (submitted by the dashboard) to end" ended "$ui"
    [ "$(state_of "$ui")" = SUCCEEDED ] || { tail -20 "$STATE/jobs/$ui/log"; fail "job $ui: $(state_of "$ui")"; }
else
    echo "note: no chromium or playwright-core (tests/browser: npm ci): the dashboard's upload not run"
fi

# ---- a restart keeps it, and removes what no index entry names -----------------------------
# (and lists the parameter names of an upload that has none kept: one from before they were)
mv "$NAMES" "$TMP/names.before"
stop_coord
# what a crash during validation leaves: a content file no entry names, temporary files
ORPHAN=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
cp "$TMP/hostile/pad8000.onnx" "$STATE/models/$ORPHAN.onnx"
echo partial >"$STATE/models/$ORPHAN.onnx.tmp"
echo partial >"$STATE/models/index.json.tmp"
echo "not ours" >"$STATE/models/NOTES"
start_coord --max-model-bytes 1000000 --host-memory-mb 2048
for f in "$ORPHAN.onnx" "$ORPHAN.onnx.tmp" index.json.tmp; do
    [ -e "$STATE/models/$f" ] && fail "STATE/models/$f is still there after a restart"
    grep -qF "models: removed $STATE/models/$f" "$TMP/coord.log" || { tail "$TMP/coord.log"; fail "no log of removing $f"; }
done
[ -s "$STATE/models/$SHA.onnx" ] || fail "the restart removed the indexed model's file"
[ -e "$STATE/models/NOTES" ] || fail "the restart removed a file that is not the store's"
echo "ok: a restart removed the unindexed file and the temporary ones: $(grep -m1 'models: removed' "$TMP/coord.log")"
BASE=$(api_base)
expect 200 "GET cnn after a restart" GET /api/v1/models/cnn -H "$AUTH"
[ "$(jq -r '.source + " " + .sha256' "$TMP/body")" = "uploaded $SHA" ] || fail "after a restart: $(cat "$TMP/body")"
[ -s "$NAMES" ] || { tail "$TMP/coord.log"; fail "the restart did not list the names of an upload without them"; }
[ "$(jq -cS . "$NAMES")" = "$(jq -cS . "$TMP/names.before")" ] ||
    fail "the names listed at the restart differ from the upload's: $(cat "$NAMES")"
grep -qF "models: cnn: its $(jq '.parameter_names | length' "$NAMES") parameter names recorded" "$TMP/coord.log" ||
    { tail "$TMP/coord.log"; fail "no log of the names recorded at the restart"; }
post "$TMP/g1.json" 400 "after the restart, freeze matching no parameter of the upload whose names it listed" \
    'freeze: \"nosuch.*\" matches no parameter of model cnn ('

# ---- the CLI: pacer upload, pacer models, pacer rm-model ---------------------------------
if [ -x "$BUILD/pacer" ]; then
    PACER="$BUILD/pacer --url $BASE --token $TOKEN"
    $PACER upload cli-net "$TMP/mnist_cnn.onnx" >"$TMP/cli.out" 2>&1 || { cat "$TMP/cli.out"; fail "pacer upload failed"; }
    grep -q "sha256 *$SHA" "$TMP/cli.out" || { cat "$TMP/cli.out"; fail "pacer upload does not print the sha256"; }
    grep -q "1x28x28 images, 10 classes" "$TMP/cli.out" || { cat "$TMP/cli.out"; fail "pacer upload: no input shape"; }
    $PACER models >"$TMP/cli.out" 2>&1 || fail "pacer models failed"
    grep -q "^cli-net  *uploaded  *1x28x28" "$TMP/cli.out" || { cat "$TMP/cli.out"; fail "pacer models does not list cli-net"; }
    expect_error 1 "operator Softplus is not supported" $PACER upload soft "$TMP/mnist_softplus.onnx"
    expect_error 1 "lenet5 is a built-in model" $PACER rm-model lenet5
    $PACER rm-model cli-net >"$TMP/cli.out" 2>&1 || { cat "$TMP/cli.out"; fail "pacer rm-model failed"; }
    expect_error 1 "no model cli-net in the catalog" $PACER models cli-net
else
    echo "note: $BUILD/pacer not built (libcurl missing): the CLI part not run"
fi

# ---- DELETE: 204, then 404; the bytes are gone ----------------------------------------------
expect 204 "DELETE cnn" DELETE /api/v1/models/cnn -H "$AUTH"
expect 404 "GET cnn after DELETE" GET /api/v1/models/cnn -H "$AUTH"
expect 404 "DELETE cnn again" DELETE /api/v1/models/cnn -H "$AUTH"
# the dashboard's ui-net holds the same bytes: they stay until it goes too
if [ "$(req GET /api/v1/models/ui-net -H "$AUTH")" = 200 ]; then
    [ -s "$STATE/models/$SHA.onnx" ] || fail "DELETE cnn removed the bytes ui-net still holds"
    expect 204 "DELETE ui-net" DELETE /api/v1/models/ui-net -H "$AUTH"
fi
[ -e "$STATE/models/$SHA.onnx" ] && fail "the stored file is still there after DELETE"
[ -e "$STATE/models/$SHA.params.json" ] && fail "the kept parameter names are still there after DELETE"
redis-cli -s "$STATE/redis.sock" --raw EXISTS "pacer:model:$SHA" | grep -qx 0 || fail "pacer:model:SHA256 still in Redis"

# ---- a validator that a signal ends (what its address-space limit or a crash does): 422 ------
stop_coord
REAL_WORKER=$(cd "$(dirname "$WORKER")" && pwd)/$(basename "$WORKER")
printf '#!/bin/sh\ncase " $* " in *" --check-onnx "*) kill -SEGV $$ ;; esac\nexec "%s" "$@"\n' "$REAL_WORKER" \
    >"$TMP/crash-worker.sh"
chmod +x "$TMP/crash-worker.sh"
start_coord --max-model-bytes 1000000 --host-memory-mb 2048 --worker "$TMP/crash-worker.sh"
BASE=$(api_base)
expect 422 "PUT while the validator crashes" PUT /api/v1/models/crash -H "$AUTH" -H "$OCTET" \
    --data-binary "@$TMP/mnist_cnn.onnx"
grep -qF "the validator was stopped by signal 11" "$TMP/body" || { cat "$TMP/body"; fail "the 422 does not name the signal"; }
coord_alive || fail "the coordinator died with its validator"
[ -e "$STATE/models/$SHA.onnx" ] && fail "the bytes the crashed validator refused were kept"
echo "ok"
