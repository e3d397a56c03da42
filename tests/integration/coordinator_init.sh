# init through the coordinator: a GPT job (1 block, width 16) trains 2 epochs on a text under
# a data root and leaves JOBDIR/model.safetensors; a job submitted with init.job = its id
# (resolved at submission to that file, named in the stored spec's init.safetensors) at a
# learning rate of 1e-30 has the source's last test_loss at its first evaluation, and its
# summary's init names the source job, every tensor loaded and none missing or unexpected.
# Refused at submission by message (4xx): an init.safetensors path outside the data roots,
# an unknown init.job, and two sources.
. tests/integration/coordinator_lib.inc
need_api_tools
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
JSON="Content-Type: application/json"
mkdir -p "$TMP/root/text"
head -c 3000 "$TEXT" >"$TMP/root/text/train.txt"
head -c 800 "$TEXT" >"$TMP/root/text/val.txt"
start_coord_admin --data-root "$TMP/root"
jq -n --arg data "$TMP/root/text" '{name: "src", model: {gpt: {layers: 1, heads: 2, embd: 16, block_size: 16}},
      dataset: {format: "text", path: $data}, batch_size: 8, epochs: 2, seed: 2, device: "cpu", log_every: 0,
      optimizer: {kind: "sgd", lr: 0.05}}' >"$TMP/src.json"
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/src.json"
src=$(jq -r .id "$TMP/body")
cli wait "$src" --timeout 300 >/dev/null || { cat "$STATE/jobs/$src/log"; fail "source job $src did not succeed"; }
[ -s "$STATE/jobs/$src/model.safetensors" ] || fail "the source job left no model.safetensors"
src_loss=$(q "$src" .summary.test_loss)

jq --arg id "$src" '.name = "tuned" | .epochs = 1 | .seed = 9 | .optimizer = {kind: "sgd", lr: 1e-30, momentum: 0}
    | .init = {job: $id}' "$TMP/src.json" >"$TMP/tuned.json"
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/tuned.json"
tuned=$(jq -r .id "$TMP/body")
cli wait "$tuned" --timeout 300 >/dev/null || { cat "$STATE/jobs/$tuned/log"; fail "init.job: job $tuned did not succeed"; }
[ "$(jq -r .init.safetensors "$STATE/jobs/$tuned/spec.json")" = "$STATE/jobs/$src/model.safetensors" ] ||
    fail "the stored spec's init: $(jq -c .init "$STATE/jobs/$tuned/spec.json")"
q "$tuned" .summary >"$TMP/tuned_summary.json"
jq -e --argjson s "$src_loss" '(.test_loss - $s) | fabs <= 1e-6 * $s' "$TMP/tuned_summary.json" >/dev/null ||
    fail "init.job: test_loss $(jq .test_loss "$TMP/tuned_summary.json"), the source's last $src_loss"
[ "$(jq -c '.init | [.job, .loaded, .missing, .unexpected]' "$TMP/tuned_summary.json")" = "[\"$src\",16,[],[]]" ] ||
    fail "init.job: summary init $(jq -c .init "$TMP/tuned_summary.json")"
echo "ok: a job started from job $src's weights (init.job) evaluates to its last test_loss ($src_loss)"
ok 201 "$ADMIN" POST "/api/v1/jobs/$tuned/retry"
echo "ok: its retry is accepted: the stored spec names the same file"

jq '.init = {safetensors: "/etc/passwd"}' "$TMP/tuned.json" >"$TMP/outside.json"
ok 400 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/outside.json"
grep -q "init.safetensors: /etc/passwd is not under a data root" "$TMP/body" || { cat "$TMP/body"; fail "outside path: message"; }
jq '.init = {job: "j-999"}' "$TMP/tuned.json" >"$TMP/unknown.json"
ok 400 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/unknown.json"
grep -q "init.job: no job j-999" "$TMP/body" || { cat "$TMP/body"; fail "unknown job: message"; }
jq --arg p "$TMP/root/text/train.txt" '.init = {checkpoint: $p, safetensors: $p}' "$TMP/tuned.json" >"$TMP/two.json"
ok 400 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/two.json"
grep -q "init: give one of checkpoint, safetensors and job, not both checkpoint and safetensors" "$TMP/body" ||
    { cat "$TMP/body"; fail "two sources: message"; }
echo "ok: a path outside the data roots, an unknown job and two sources are refused by name"
stop_coord
