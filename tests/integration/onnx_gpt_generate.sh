# An imported language model generates through the API as the built-in GPT does: a
# nanoGPT-style torch module (tests/tools/onnx_gpt_generate.py: 2 blocks, 2 heads, width 32,
# block 16, the byte vocabulary, the head tied) exported by torch.onnx at opset 17, uploaded
# (PUT /api/v1/models/tiny-gpt), trained 2 epochs on 300 bytes of the GPL repeated, then
# POST /api/v1/jobs/{id}/generate greedy (temperature 0) for 40 tokens from a 10-byte prompt
# (past the 16-id window: cropped as nanoGPT's generate crops it). pacer-generate runs the
# model's own graph; PyTorch's greedy decoding of the job's trained weights
# (GET /api/v1/jobs/{id}/model.onnx loaded into the module) gives the same 40 ids, as server-
# sent events' token frames carry them. The graph ran by positions (its outputs at earlier
# positions the cache: the answer's kv_cache). A sampled answer (temperature 0.8, top_k 20,
# seed 5) repeats for its seed. It used to be 409 imported-model, and a 500 before that.
. tests/integration/coordinator_lib.inc
need_api_tools
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
JSON="Content-Type: application/json"
$TORCH_PY tests/tools/onnx_gpt_generate.py --export "$TMP/gpt.onnx" >"$TMP/export.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/export.log")"
[ $rc -eq 0 ] || { tail -5 "$TMP/export.log"; fail "torch could not export the GPT"; }
mkdir -p "$TMP/root/text"
for i in $(seq 20); do tail -c +3001 "$TEXT" | head -c 300; done >"$TMP/root/text/train.txt"
head -c 1000 "$TMP/root/text/train.txt" >"$TMP/root/text/val.txt"
start_coord_admin --data-root "$TMP/root"
ok 201 "$ADMIN" PUT /api/v1/models/tiny-gpt -H "Content-Type: application/octet-stream" --data-binary @"$TMP/gpt.onnx"
jq -n --arg data "$TMP/root/text" '{name: "imported-gpt", model: {onnx: "tiny-gpt"},
      dataset: {format: "text", path: $data, train_subset: 256, test_subset: 16}, batch_size: 16, epochs: 2,
      seed: 3, device: "cpu", log_every: 0, optimizer: {kind: "adamw", lr: 0.005}}' >"$TMP/job.json"
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/job.json"
id=$(jq -r .id "$TMP/body")
cli wait "$id" --timeout 300 >/dev/null || { tail -20 "$STATE/jobs/$id/log"; fail "imported GPT job $id did not succeed"; }
P=/api/v1/jobs/$id/generate
prompt=$(head -c 10 "$TMP/root/text/train.txt")
body=$(jq -nc --arg p "$prompt" '{prompt: $p, max_tokens: 40, temperature: 0}')
curl -sN -X POST -H "Authorization: Bearer $ADMIN" -H "$JSON" -H "Accept: text/event-stream" -d "$body" "$BASE$P" \
    >"$TMP/sse.txt" || fail "POST $P failed"
[ "$(grep -c '^event: token' "$TMP/sse.txt")" = 40 ] || { cat "$TMP/sse.txt"; fail "40 token frames expected"; }
answer=$(grep '^event: token' -A1 "$TMP/sse.txt" | grep '^data: ' | sed 's/^data: //' | jq -r .token | paste -sd, -) # (ok sets got and want)
ids=$(printf '%s' "$prompt" | od -An -tu1 | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
ok 200 "$ADMIN" GET "/api/v1/jobs/$id/model.onnx"
cp "$TMP/body" "$TMP/trained.onnx"
$TORCH_PY tests/tools/onnx_gpt_generate.py --greedy "$TMP/trained.onnx" "$ids" "$answer" >"$TMP/greedy.log" 2>&1
rc=$?
grep -v -e Warning "$TMP/greedy.log"
[ $rc -eq 0 ] || fail "the imported GPT's greedy answer through the API differs from PyTorch's (above)"
echo "ok: the uploaded GPT, trained through the API, generates PyTorch's greedy 40 tokens: $(grep '^data: ' "$TMP/sse.txt" | tail -1 | sed 's/^data: //' | jq -c .text)"
sampled='{"prompt": "This License", "max_tokens": 20, "temperature": 0.8, "top_k": 20, "seed": 5}'
ok 200 "$ADMIN" POST "$P" -H "$JSON" -d "$sampled"
first=$(jq -r .text "$TMP/body")
[ "$(jq -r .tokens "$TMP/body")" = 20 ] || fail "20 sampled tokens expected: $(cat "$TMP/body")"
[ "$(jq -r .kv_cache "$TMP/body")" = true ] || fail "the imported GPT recomputed its window: $(cat "$TMP/body")"
ok 200 "$ADMIN" POST "$P" -H "$JSON" -d "$sampled"
[ "$(jq -r .text "$TMP/body")" = "$first" ] || fail "seed 5 sampled two texts"
echo "ok: a sampled answer (temperature 0.8, top_k 20) repeats for its seed"
