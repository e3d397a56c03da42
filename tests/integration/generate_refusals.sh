# What POST /api/v1/jobs/{id}/generate and the drain refuse, each by its message, on a
# coordinator whose one host is this machine; the data are generated (IDX, no data set).
#   - a job that trains an uploaded ONNX model on images (PUT /api/v1/models/NAME, "model":
#     {"onnx": NAME}; the model is pacer-worker's own export of a LeNet-5) has no language
#     model to generate from: 409 imported-model, said before any pacer-generate starts (an
#     imported language model on text generates: onnx_gpt_generate.sh);
#   - a job submitted right after a drain of the only host answered stays QUEUED: never
#     placed on the drained host (the tick read the drains once a second, and a job
#     submitted 21 ms after the answer was placed there); three rounds of drain, submit,
#     cancel, undrain;
#   - generate on that queued job: 409 nothing-to-generate-from, as docs/openapi.json says;
#   - a body that is not JSON gets a message of its own for each fault (bytes that are not
#     UTF-8, a lone surrogate, NaN, a key twice), on generate and on drain alike;
#   - temperature 1e-310 (below the smallest normal double, which pacer-generate's parser
#     refuses) is refused naming the JSON field, not pacer-generate's --temperature flag;
#   - each JSON route's 415 names what it wants: generate's "the generate request", not
#     "the job spec".
. tests/integration/coordinator_lib.inc
need_api_tools
mkdir -p "$TMP/root/digits"
$BUILD/tools/gen_dataset idx "$TMP/root/digits" 640 100 7 || fail "cannot generate IDX files"
cat >"$TMP/export.json" <<JSON
{"name": "exp", "model": "lenet5", "dataset": {"name": "mnist", "path": "$TMP/root/digits", "train_subset": 128},
 "batch_size": 64, "epochs": 1, "seed": 7, "log_every": 0, "device": "cpu"}
JSON
$WORKER --spec "$TMP/export.json" --stop-after-steps 1 --export-onnx "$TMP/lenet.onnx" >"$TMP/export.log" 2>&1 ||
    { tail -5 "$TMP/export.log"; fail "pacer-worker --export-onnx failed"; }
start_coord_admin --data-root "$TMP/root"
ok 201 "$ADMIN" PUT /api/v1/models/tiny-lenet -H "Content-Type: application/octet-stream" --data-binary @"$TMP/lenet.onnx"
jq -n --arg data "$TMP/root/digits" '{name: "imported", model: {onnx: "tiny-lenet"},
      dataset: {name: "mnist", path: $data, train_subset: 128, test_subset: 64}, batch_size: 64, epochs: 1, seed: 7, log_every: 0, device: "cpu"}' \
    >"$TMP/imported.json"
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/imported.json"
id=$(jq -r .id "$TMP/body")
await 120 "job $id (the uploaded model) to succeed" is_api_state "$id" SUCCEEDED
refused 409 "job $id trains the uploaded ONNX model tiny-lenet on a data set that is neither text nor tokens: it is no language model, and nothing turns a prompt into its input" \
    "$ADMIN" POST "/api/v1/jobs/$id/generate" -H "$JSON" -d '{"prompt": "a"}'
[ "$(jq -r .type "$TMP/body")" = urn:pacer:problem:imported-model ] || fail "type $(jq -r .type "$TMP/body"), want imported-model"
grep -q "http: job $id generates" "$TMP/coord.log" && fail "pacer-generate was started for the uploaded model's job"
echo "ok: an uploaded model's job answers 409 imported-model before any pacer-generate starts"

# The drain: three rounds, each job submitted at once after the drain's answer.
host=$(cli cluster | jq -r '.coordinator.hosts[0].name')
[ -n "$host" ] && [ "$host" != null ] || fail "no host in GET /api/v1/cluster"
jq '.name = "after-drain" | .model = "lenet5"' "$TMP/imported.json" >"$TMP/plain.json"
for round in 1 2 3; do
    ok 200 "$ADMIN" POST "/api/v1/cluster/hosts/$host/drain" -H "$JSON" -d '{"deadline_s": 60}'
    ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/plain.json"
    q=$(jq -r .id "$TMP/body")
    sleep 1.5 # several ticks (0.2 s each) and a drain read (once a second)
    [ "$(q "$q" .state)" = QUEUED ] || fail "round $round: job $q, submitted after $host's drain answered, is $(q "$q" .state)"
    [ -e "$STATE/jobs/$q/spec.json" ] && fail "round $round: job $q was launched on the drained host"
    [ "$round" = 1 ] && {
        refused 409 "job $q has not started: it has no checkpoint to generate from" \
            "$ADMIN" POST "/api/v1/jobs/$q/generate" -H "$JSON" -d '{"prompt": "a"}'
        [ "$(jq -r .type "$TMP/body")" = urn:pacer:problem:nothing-to-generate-from ] ||
            fail "a queued job's generate: type $(jq -r .type "$TMP/body"), want nothing-to-generate-from"
        queued=$q
    }
    [ "$round" = 3 ] || { ok 200 "$ADMIN" DELETE "/api/v1/jobs/$q"; ok 204 "$ADMIN" DELETE "/api/v1/cluster/hosts/$host/drain"; }
done
echo "ok: jobs submitted right after a drain's answer stay QUEUED (3 rounds); generate on one is 409 nothing-to-generate-from"

# Bodies that are not JSON, each fault its own message (the queued job: the body is read
# after the job is found).
P=/api/v1/jobs/$queued/generate
bad() { # STATUS DETAIL BODY-FILE PATH
    refused "$1" "$2" "$ADMIN" POST "$4" -H "$JSON" --data-binary @"$3"
}
printf '{"prompt": "a\377"}' >"$TMP/utf8.json"
printf '{"prompt": "\\ud800"}' >"$TMP/surrogate.json"
printf '{"prompt": "a", "temperature": NaN}' >"$TMP/nan.json"
printf '{"prompt": "a", "prompt": "b"}' >"$TMP/dup.json"
bad 400 "body: not UTF-8 at byte 13 (line 1 column 13; JSON text is UTF-8): unable to decode byte 0xff near '\"a'" "$TMP/utf8.json" "$P"
bad 400 "body: a lone surrogate at line 1 column 19 (\\uD800-\\uDFFF escapes come as a high-low pair, or not at all): invalid Unicode '\\uD800' near '\"\\ud800\"'" "$TMP/surrogate.json" "$P"
bad 400 "body: NaN and Infinity are not JSON numbers (line 1 column 34): invalid token near 'NaN'" "$TMP/nan.json" "$P"
bad 400 "body: a key given twice at line 1 column 24 (give each key once): duplicate object key near '\"prompt\"'" "$TMP/dup.json" "$P"
printf '{"reason": "x\377"}' >"$TMP/d-utf8.json"
printf '{"deadline_s": 5, "deadline_s": 6}' >"$TMP/d-dup.json"
D=/api/v1/cluster/hosts/$host/drain
bad 400 "body: not UTF-8 at byte 13 (line 1 column 13; JSON text is UTF-8): unable to decode byte 0xff near '\"x'" "$TMP/d-utf8.json" "$D"
bad 400 "body: a key given twice at line 1 column 30 (give each key once): duplicate object key near '\"deadline_s\"'" "$TMP/d-dup.json" "$D"
refused 400 "temperature: 1e-310 is below the smallest normal number 2.2250738585072014e-308: give 0 (greedy) or a number from 2.2250738585072014e-308 to 100" \
    "$ADMIN" POST "$P" -H "$JSON" -d '{"prompt": "a", "temperature": 1e-310}'
echo "ok: invalid UTF-8, a lone surrogate, NaN, a duplicate key and a subnormal temperature each refused by name"

refused 415 "send the generate request ({\"prompt\": \"...\", \"max_tokens\": N, ...}) with Content-Type: application/json" \
    "$ADMIN" POST "$P" -H "Content-Type: text/plain" -d '{"prompt": "a"}'
refused 415 "send the job spec with Content-Type: application/json" \
    "$ADMIN" POST /api/v1/jobs -H "Content-Type: text/plain" --data-binary @"$TMP/plain.json"
echo "ok: each route's 415 names what it wants"
stop_coord
