# The trained model of a job under the coordinator (issue 25): a short built-in lenet5 job's
# worker writes JOBDIR/model.onnx (--model-onnx, with each checkpoint and at the end);
# GET /api/v1/jobs/{id}/model.onnx serves it as an attachment named ID.onnx, the job's JSON
# names it (model_onnx), `pacer export ID -o FILE` saves the same bytes, and onnx.checker
# (full_check) accepts it with lenet5's state_dict names. The same weights as safetensors
# (--model-safetensors, GET .../model.safetensors, model_safetensors in the JSON), read by
# the format's specification (tests/tools/st_torch.py): model.onnx's initializers, in order.
# An unknown job and a job without the file are 404 problem details that say which; the
# JSON then has no model_onnx (model_safetensors).
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
command -v curl >/dev/null || skip "curl not installed (make deps)"
$TORCH_PY -c "import onnx" 2>/dev/null || skip "onnx not importable by /usr/bin/python3"
[ -x "$BUILD/pacer" ] || skip "$BUILD/pacer not built (libcurl)"
start_coord
base=$(api_base)

spec "$TMP/small.json" small 1
id=$(submit "$TMP/small.json")
cli wait "$id" --timeout 300 || { cat "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
[ -s "$STATE/jobs/$id/model.onnx" ] || { cat "$STATE/jobs/$id/log"; fail "no $STATE/jobs/$id/model.onnx"; }
[ "$(field_of "$id" model_onnx)" = "/api/v1/jobs/$id/model.onnx" ] || fail "model_onnx: $(field_of "$id" model_onnx)"

code=$(curl -s -D "$TMP/h" -o "$TMP/got.onnx" -w '%{http_code}' "$base/api/v1/jobs/$id/model.onnx")
[ "$code" = 200 ] || fail "GET model.onnx: $code"
grep -qi '^content-type: application/octet-stream' "$TMP/h" || { cat "$TMP/h"; fail "content type"; }
grep -qi "^content-disposition: attachment; filename=\"$id.onnx\"" "$TMP/h" || { cat "$TMP/h"; fail "disposition"; }
cmp "$TMP/got.onnx" "$STATE/jobs/$id/model.onnx" || fail "the download is not the job's file"
$BUILD/pacer --url "$base" export "$id" -o "$TMP/cli.onnx" 2>"$TMP/cli.err" || { cat "$TMP/cli.err"; fail "pacer export"; }
grep -q "pacer export: wrote $TMP/cli.onnx" "$TMP/cli.err" || { cat "$TMP/cli.err"; fail "pacer export said"; }
cmp "$TMP/cli.onnx" "$TMP/got.onnx" || fail "pacer export wrote other bytes"
$TORCH_PY - "$TMP/got.onnx" <<'PY' || fail "the job's model.onnx does not check"
import sys, onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
names = [t.name for t in m.graph.initializer]
want = ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight",
        "fc2.bias", "fc3.weight", "fc3.bias"]
assert names == want, names
print("checker (full_check) accepts the job's model.onnx: %s" % " ".join(names))
PY
echo "ok: $id's model.onnx served, exported by the CLI, checked"

# the same weights as safetensors (--model-safetensors), read by the format's specification
[ "$(field_of "$id" model_safetensors)" = "/api/v1/jobs/$id/model.safetensors" ] ||
    fail "model_safetensors: $(field_of "$id" model_safetensors)"
code=$(curl -s -D "$TMP/h" -o "$TMP/got.safetensors" -w '%{http_code}' "$base/api/v1/jobs/$id/model.safetensors")
[ "$code" = 200 ] || fail "GET model.safetensors: $code"
grep -qi "^content-disposition: attachment; filename=\"$id.safetensors\"" "$TMP/h" || { cat "$TMP/h"; fail "disposition"; }
cmp "$TMP/got.safetensors" "$STATE/jobs/$id/model.safetensors" || fail "the download is not the job's file"
$TORCH_PY - "$TMP/got.safetensors" "$TMP/got.onnx" <<'PY' || fail "the job's model.safetensors is not its model.onnx's weights"
import sys
import numpy as np
import onnx
from onnx import numpy_helper
sys.path.insert(0, "tests/tools")
import st_torch
tensors, _ = st_torch.read(sys.argv[1])
inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[2]).graph.initializer}
assert list(tensors) == list(inits), (list(tensors), list(inits))
for k, v in tensors.items():
    assert v.shape == inits[k].shape and np.array_equal(v, inits[k]), k
print("model.safetensors: %s, the shapes and values of model.onnx's initializers" % " ".join(tensors))
PY
echo "ok: $id's model.safetensors served: model.onnx's weights"

# 404s that say why
code=$(curl -s -o "$TMP/p" -w '%{http_code}' "$base/api/v1/jobs/j-999/model.onnx")
[ "$code" = 404 ] || fail "unknown job: $code"
grep -q "not found\|no job" "$TMP/p" || { cat "$TMP/p"; fail "unknown job's problem"; }
rm "$STATE/jobs/$id/model.onnx"
code=$(curl -s -o "$TMP/p" -w '%{http_code}' "$base/api/v1/jobs/$id/model.onnx")
[ "$code" = 404 ] || fail "job without its file: $code"
jq -e '.type | test("no-model")' "$TMP/p" >/dev/null || { cat "$TMP/p"; fail "no-model problem"; }
[ "$(field_of "$id" model_onnx)" = null ] || fail "model_onnx still set without the file"
rm "$STATE/jobs/$id/model.safetensors"
code=$(curl -s -o "$TMP/p" -w '%{http_code}' "$base/api/v1/jobs/$id/model.safetensors")
[ "$code" = 404 ] || fail "job without its safetensors: $code"
jq -e '.type | test("no-model")' "$TMP/p" >/dev/null || { cat "$TMP/p"; fail "no-model problem"; }
grep -q "the job has no model.safetensors" "$TMP/p" || { cat "$TMP/p"; fail "the 404 does not name model.safetensors"; }
[ "$(field_of "$id" model_safetensors)" = null ] || fail "model_safetensors still set without the file"
expect_error 1 "No trained model yet\|no model.onnx" $BUILD/pacer --url "$base" export "$id" -o "$TMP/none.onnx"
[ -e "$TMP/none.onnx" ] && fail "pacer export left a file after a 404"
echo "ok: 404 for an unknown job and for a job without its model"
stop_coord
echo "ok"
