# Uploaded models under users' limits (common/users.h "limits"): with --member-max-models 2
# a member's third upload of a new name is refused (429, naming max_models and its value)
# and nothing of it is stored, while a replacement of one of her own still passes; an admin
# raises her max_models (PUT /api/v1/users/alice) and it is accepted. Then five pairs of
# uploads under fresh names, each pair two requests at once (their bodies, different
# models, fed through FIFOs a block at a time in turn, so that both requests are in before
# either is stored): in every pair exactly one is 201 and the other 409, naming the race;
# afterwards STATE/models holds one file per model the index names, Redis one copy of
# each (pacer:model:{sha256}) and no temporary file: nothing of a loser is left behind.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

ADMIN=quota-admin-$$-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
export PACER_TOKEN=$ADMIN
OCT="Content-Type: application/octet-stream"

# Two ONNX files of one size, different bytes: lenet5's initial weights of two seeds.
for seed in 5 6; do
    jq -n --arg p "$FASHION" --argjson s $seed '{model: "lenet5", dataset: {name: "fashion-mnist", path: $p,
        train_subset: 64, test_subset: 64}, workers: 1, batch_size: 32, epochs: 1, seed: $s, device: "cpu"}' \
        >"$TMP/w$seed.json"
    $WORKER --spec "$TMP/w$seed.json" --export-onnx-init "$TMP/m$seed.onnx" >"$TMP/w.log" 2>&1 ||
        { tail -5 "$TMP/w.log"; fail "pacer-worker --export-onnx-init (seed $seed)"; }
done
cmp -s "$TMP/m5.onnx" "$TMP/m6.onnx" && fail "the two seeds exported the same bytes"

start_coord --preflight off --member-max-models 2
BASE=$(api_base)
ALICE=$(adduser alice member) || exit 1
models_files() { find "$STATE/models" -name '*.onnx' | wc -l; }

# ---- max_models ----------------------------------------------------------------------------------------------
ok 201 "$ALICE" PUT /api/v1/models/a1 -H "$OCT" --data-binary @"$TMP/m5.onnx"
ok 201 "$ALICE" PUT /api/v1/models/a2 -H "$OCT" --data-binary @"$TMP/m5.onnx"
refused 429 "max_models: alice may own at most 2 uploaded models and owns 2: delete one first (DELETE /api/v1/models/{name})" \
    "$ALICE" PUT /api/v1/models/a3 -H "$OCT" --data-binary @"$TMP/m6.onnx"
jq -e '.type == "urn:pacer:problem:limit-reached"' "$TMP/body" >/dev/null || fail "the 429: $(cat "$TMP/body")"
[ "$(models_files)" = 1 ] || fail "the refused upload left $(models_files) files in $STATE/models: $(ls "$STATE/models")"
ok 200 "$ALICE" PUT /api/v1/models/a2 -H "$OCT" --data-binary @"$TMP/m6.onnx" # her own: a replacement
ok 200 "$ADMIN" PUT /api/v1/users/alice -H "$JSON" -d '{"max_models": 3}'
ok 201 "$ALICE" PUT /api/v1/models/a3 -H "$OCT" --data-binary @"$TMP/m6.onnx"
[ "$(jq -r .owner "$TMP/body")" = alice ] || fail "a3's owner: $(cat "$TMP/body")"
echo "ok: a member's third model refused (max_models 2), none of it stored; accepted once an admin raised it"

# ---- two uploads of one new name at once ----------------------------------------------------------------------
ok 200 "$ADMIN" PUT /api/v1/users/alice -H "$JSON" -d '{"max_models": 0}'
split -b 16384 "$TMP/m5.onnx" "$TMP/a."
split -b 16384 "$TMP/m6.onnx" "$TMP/b."
# put NAME FIFO OUT: alice's PUT of NAME with the body read from FIFO (chunked), the status into OUT
put() {
    curl -s -o "$3.body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $ALICE" -H "$OCT" -T "$2" \
        "$BASE/api/v1/models/$1" >"$3"
}
for k in 1 2 3 4 5; do
    rm -f "$TMP/f1" "$TMP/f2"
    mkfifo "$TMP/f1" "$TMP/f2"
    put "race$k" "$TMP/f1" "$TMP/r1" &
    p1=$!
    put "race$k" "$TMP/f2" "$TMP/r2" &
    p2=$!
    # both bodies a block at a time in turn: the two requests end together
    timeout 60 sh -c 'exec 3>"$1" 4>"$2"; for c in "$3".*; do cat "$c" >&3; cat "$4${c#"$3"}" >&4; done' \
        gate "$TMP/f1" "$TMP/f2" "$TMP/a" "$TMP/b" || fail "pair $k: the bodies were not taken"
    wait $p1 $p2
    [ "$(cat "$TMP/r1") $(cat "$TMP/r2")" = "201 409" ] || [ "$(cat "$TMP/r1") $(cat "$TMP/r2")" = "409 201" ] ||
        fail "pair $k: HTTP $(cat "$TMP/r1") and $(cat "$TMP/r2"), want one 201 and one 409 ($(cat "$TMP/r1.body" "$TMP/r2.body"))"
    loser=$TMP/r1.body
    [ "$(cat "$TMP/r1")" = 409 ] || loser=$TMP/r2.body
    [ "$(jq -r .detail "$loser")" = "race$k was uploaded by another request while this one was on its way: PUT again to replace it" ] ||
        fail "pair $k: the 409 says $(cat "$loser")"
done
call "$ADMIN" GET /api/v1/models >/dev/null
jq -r '.models[] | select(.source == "uploaded") | .sha256' "$TMP/body" | sort -u >"$TMP/shas"
ls "$STATE/models" | sed -n 's/\.onnx$//p' | sort >"$TMP/files"
cmp -s "$TMP/shas" "$TMP/files" || fail "STATE/models holds $(tr '\n' ' ' <"$TMP/files"), the catalog names $(tr '\n' ' ' <"$TMP/shas")"
[ -z "$(find "$STATE/models" -name '*.tmp')" ] || fail "temporary files left: $(ls "$STATE/models")"
rcli --scan --pattern 'pacer:model:*' | sed 's/^pacer:model://' | sort >"$TMP/keys"
cmp -s "$TMP/shas" "$TMP/keys" || fail "Redis holds the bytes of $(tr '\n' ' ' <"$TMP/keys"), the catalog names $(tr '\n' ' ' <"$TMP/shas")"
echo "ok: five pairs of uploads at once, each one 201 and one 409; no file or Redis copy left over"
stop_coord
