# A job's weights as safetensors through the coordinator, the CLI and the Python client: a
# built-in GPT job (1 block, width 16) on a text under a data root leaves
# JOBDIR/model.safetensors; `pacer export ID --format safetensors` saves its bytes, and with
# --names hf --dtype bf16 (GET ...?names=hf&dtype=bf16) the same weights as Hugging Face
# GPT-2 holds them: each tensor BF16, torch's rounding of the stored F32, the four products
# of the block transposed (Conv1D). The Python client's job.safetensors() and
# download_safetensors(..., names="hf", dtype="bf16") give the same bytes, and its train()
# takes freeze globs by the module's own names, a tied one included (tests/tools/pyclient_st.py).
# Refused by name: another names (400, the parameter named), --names without --format
# safetensors and another --format (the CLI's usage errors), names=hf for a model that is
# not the built-in GPT (422 names-unsupported).
. tests/integration/coordinator_lib.inc
need_api_tools
$TORCH_PY -c 'import torch, onnx, numpy' 2>/dev/null || skip "python3-torch, python3-onnx and python3-numpy are needed (make deps)"
[ -x "$BUILD/pacer" ] || skip "$BUILD/pacer not built (libcurl)"
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
JSON="Content-Type: application/json"
mkdir -p "$TMP/root/text"
head -c 2000 "$TEXT" >"$TMP/root/text/train.txt"
head -c 600 "$TEXT" >"$TMP/root/text/val.txt"
start_coord_admin --data-root "$TMP/root"
jq -n --arg data "$TMP/root/text" '{name: "st", model: {gpt: {layers: 1, heads: 2, embd: 16, block_size: 16}},
      dataset: {format: "text", path: $data}, batch_size: 8, epochs: 1, seed: 2, device: "cpu", log_every: 0,
      optimizer: {kind: "sgd", lr: 0.05}}' >"$TMP/st.json"
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/st.json"
id=$(jq -r .id "$TMP/body")
cli wait "$id" --timeout 300 >/dev/null || { cat "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
stored=$STATE/jobs/$id/model.safetensors
[ -s "$stored" ] || fail "job $id left no model.safetensors"

PACER="$BUILD/pacer --url $BASE"
$PACER export "$id" --format safetensors -o "$TMP/own.safetensors" 2>"$TMP/cli.err" || { cat "$TMP/cli.err"; fail "pacer export --format safetensors"; }
cmp "$TMP/own.safetensors" "$stored" || fail "pacer export --format safetensors wrote other bytes than the job's file"
$PACER export "$id" --format safetensors --names hf --dtype bf16 -o "$TMP/hf16.safetensors" 2>"$TMP/cli.err" ||
    { cat "$TMP/cli.err"; fail "pacer export --names hf --dtype bf16"; }
grep -q "pacer export: wrote $TMP/hf16.safetensors" "$TMP/cli.err" || { cat "$TMP/cli.err"; fail "pacer export said"; }
$TORCH_PY - "$TMP/hf16.safetensors" "$stored" <<'PY' || fail "the hf/bf16 download is not the job's weights as Hugging Face GPT-2 holds them in BF16"
import sys
import numpy as np
import torch
sys.path.insert(0, "tests/tools")
import st_torch
import st_hf_torch
dtypes = {}
got, _ = st_torch.read(sys.argv[1], dtypes)
ref, _ = st_torch.read(sys.argv[2])
assert list(got) == list(ref), (list(got), list(ref))
for k, a in ref.items():
    want = torch.from_numpy(np.array(a.T if st_hf_torch.is_product(k) else a)).bfloat16()
    assert dtypes[k] == "BF16" and got[k].shape == tuple(want.shape), (k, dtypes[k], got[k].shape)
    assert np.array_equal(got[k], want.view(torch.int16).numpy().view(np.uint16)), k
print("hf/bf16: %d tensors, BF16 of the job's weights, c_attn %s" % (len(got), got["transformer.h.0.attn.c_attn.weight"].shape))
PY
echo "ok: pacer export --format safetensors: the job's file, and as Hugging Face GPT-2's in BF16"

ok 400 "$ADMIN" GET "/api/v1/jobs/$id/model.safetensors?names=gpt2"
[ "$(jq -r '[.type, .parameter] | join(" ")' "$TMP/body")" = "urn:pacer:problem:invalid-parameter names" ] ||
    { cat "$TMP/body"; fail "names=gpt2: not refused naming the parameter"; }
ok 400 "$ADMIN" GET "/api/v1/jobs/$id/model.safetensors?dtype=f8"
grep -q "dtype: 'f8' is not one of f32 and bf16" "$TMP/body" || { cat "$TMP/body"; fail "dtype=f8: not refused by name"; }
$PACER export "$id" --names hf -o "$TMP/x.onnx" 2>"$TMP/cli.err" && fail "--names without --format safetensors was taken"
grep -q "pacer export: --names and --dtype go with --format safetensors" "$TMP/cli.err" || { cat "$TMP/cli.err"; fail "--names alone: not said"; }
$PACER export "$id" --format tflite 2>"$TMP/cli.err" && fail "--format tflite was taken"
grep -q -- "--format: 'tflite' is not onnx or safetensors" "$TMP/cli.err" || { cat "$TMP/cli.err"; fail "--format tflite: not said"; }
echo "ok: another names, dtype or format is refused by name"

PYTHONPATH=clients/python $TORCH_PY tests/tools/pyclient_st.py "$BASE" "$ADMIN" "$TMP/root/text" "$id" "$stored" \
    "$TMP/py_hf16.safetensors"
rc=$?
[ $rc -eq 77 ] && skip "tests/tools/pyclient_st.py: torch/onnx not importable"
[ $rc -eq 0 ] || { tail -30 "$TMP/coord.log"; fail "the Python client's safetensors and freeze checks failed (exit $rc)"; }
cmp "$TMP/py_hf16.safetensors" "$TMP/hf16.safetensors" || fail "download_safetensors wrote other bytes than pacer export"
echo "ok: the Python client downloads the same files and freezes by the module's names"

# The job page's Starting weights row (headless Chromium, as shard_nodes.sh; said and
# skipped without it): a job started from job $id's weights (init.job, strict false) with
# its attention frozen shows its summary's counts; a running one, whose summary is not
# written yet, says they are not reported, never 0.
jq --arg id "$id" '.name = "tuned" | .seed = 5 | .init = {job: $id, strict: false} | .freeze = ["transformer.h.0.attn.*"]' \
    "$TMP/st.json" >"$TMP/tuned.json"
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/tuned.json"
tuned=$(jq -r .id "$TMP/body")
cli wait "$tuned" --timeout 300 >/dev/null || { cat "$STATE/jobs/$tuned/log"; fail "job $tuned did not succeed"; }
wtext=$(q "$tuned" '.summary | "trainable parameters \(.trainable_parameters) · frozen \(.frozen_parameters) · init from job \(.init.job): \(.init.loaded) tensors loaded, \(.init.missing | length) missing, \(.init.unexpected | length) unexpected"')
case $wtext in *"frozen 1088 · init from job $id: 16 tensors loaded, 0 missing, 0 unexpected") ;; *) fail "job $tuned's summary: $wtext" ;; esac
jq '.name = "long" | .epochs = 100000' "$TMP/tuned.json" >"$TMP/long.json"
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/long.json"
long=$(jq -r .id "$TMP/body")
if have_browser; then
    # toLocaleString's thousands separator: en-US, Chromium's default here
    want_page=$(echo "$wtext" | sed 's/parameters \([0-9]\)\([0-9][0-9][0-9]\) /parameters \1,\2 /; s/frozen \([0-9]\)\([0-9][0-9][0-9]\) /frozen \1,\2 /')
    timeout 120 node tests/browser/weights.mjs "$BASE" "$ADMIN" "$tuned" "$want_page" "$BUILD/weights.png" ||
        fail "the job page's Starting weights row (screenshot: $BUILD/weights.png)"
    timeout 120 node tests/browser/weights.mjs "$BASE" "$ADMIN" "$long" \
        "trainable parameters not reported · frozen not reported · init from job $id: tensors loaded, missing and unexpected not reported yet" \
        "$BUILD/weights_running.png" || fail "the job page's Starting weights row of a running job (screenshot: $BUILD/weights_running.png)"
else
    echo "not checked: the job page's Starting weights row (no chromium, node or playwright-core)"
fi
ok 202 "$ADMIN" DELETE "/api/v1/jobs/$long"

# a model that is not the built-in GPT has no Hugging Face GPT-2 names
$TORCH_PY -c "
import sys, numpy as np
sys.path.insert(0, 'tests/tools')
import st_torch
st_torch.write(sys.argv[1], {'fc.weight': np.ones((2, 3), np.float32)})" "$stored" || fail "could not write a non-GPT file"
ok 422 "$ADMIN" GET "/api/v1/jobs/$id/model.safetensors?names=hf"
[ "$(jq -r .type "$TMP/body")" = "urn:pacer:problem:names-unsupported" ] || { cat "$TMP/body"; fail "names=hf of another model: type"; }
grep -q "names hf: Hugging Face GPT-2's names are the built-in GPT's only" "$TMP/body" || { cat "$TMP/body"; fail "names=hf of another model: not said"; }
ok 200 "$ADMIN" GET "/api/v1/jobs/$id/model.safetensors?dtype=bf16"
echo "ok: names=hf of another model is a 422 naming why; its dtype=bf16 is served"
rm "$stored"
$PACER export "$id" --format safetensors -o "$TMP/none.safetensors" 2>"$TMP/cli.err" && fail "pacer export of no file exited 0"
grep -q "job $id ended SUCCEEDED, but the coordinator has no model.safetensors for it" "$TMP/cli.err" ||
    { cat "$TMP/cli.err"; fail "pacer export --format safetensors of a job without the file: not said"; }
[ -e "$TMP/none.safetensors" ] && fail "pacer export left a file after a 404"
echo "ok: a job without model.safetensors is said so by name"
stop_coord
