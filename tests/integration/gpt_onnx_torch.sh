# A nanoGPT-style torch module (tests/tools/gpt_onnx_torch.py: gpt_torch.py's, 2 blocks, 2
# heads, width 32, block 16, vocabulary 64, random weights) exported by torch.onnx at opset 13
# (LayerNorm decomposed) and 17 (LayerNormalization) and imported by pacer: int64 token ids,
# the embedding Gather, positions from a folded arange, the causal mask's Where read by
# Softmax as one causal softmax, the head tied to the token embedding. Pacer's logits and
# the gradient of every parameter tensor (the sequence loss over every position; the tied
# table's the sum of both paths) within gpt_torch.py's named tolerances of torch's float64;
# the same for GPT-2's blocks as Hugging Face writes them without Conv1D (a boolean mask by
# torch.where with finfo.min, the tanh GELU, biases, an untied head).
# Then 10 AdamW steps on 2 ranks against torch's, the trained model exported (torch,
# pacer and onnxruntime-node agree on its logits), and the refusals, each named.
. tests/lib.sh
[ -x "$BUILD/tools/gpt_tool" ] || fail "$BUILD/tools/gpt_tool is not built"
$TORCH_PY tests/tools/gpt_onnx_torch.py "$BUILD/tools/gpt_tool" "$TMP" 13,17,gpt2:13,gpt2:17 >"$TMP/grads.log" 2>&1
rc=$?
grep -v -e Warning -e 'att = ' -e 'low = ' "$TMP/grads.log"
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/grads.log")"
[ $rc -eq 0 ] || fail "pacer's import of torch's GPT differs from torch (above)"
echo "ok: nanoGPT's and GPT-2's blocks, opsets 13 and 17: the imported GPT's logits and every gradient are torch's"
"$WORKER" --check-onnx "$TMP/o13/gpt.onnx" >"$TMP/check.json" 2>"$TMP/check.err" ||
    { cat "$TMP/check.err"; fail "pacer-worker --check-onnx refused the GPT"; }
[ "$(json "$TMP/check.json" .classes)" = 64 ] || fail "--check-onnx: classes $(json "$TMP/check.json" .classes), want 64"
[ "$(json "$TMP/check.json" .parameters)" = 28032 ] ||
    fail "--check-onnx: $(json "$TMP/check.json" .parameters) parameters, want 28032 (the tied table counted once)"

# torch.onnx's default export folds the tied head's weight.T into an initializer of its own:
# pacer ties it back (the same 28032 parameters), not training it apart from the table
$TORCH_PY - "$TMP/folded.onnx" >/dev/null 2>&1 <<'PY' || fail "could not export the GPT with constant folding"
import sys
import torch
sys.path.insert(0, "tests/tools")
import gpt_onnx_torch as g
torch.onnx.export(g.module(torch.float32), (torch.zeros(2, g.T, dtype=torch.long),), sys.argv[1], opset_version=17,
                  input_names=["idx"], output_names=["logits"], dynamic_axes={"idx": {0: "N"}, "logits": {0: "N"}})
PY
"$WORKER" --check-onnx "$TMP/folded.onnx" >"$TMP/folded.json" 2>"$TMP/folded.err" ||
    { cat "$TMP/folded.err"; fail "pacer-worker --check-onnx refused the constant-folded GPT"; }
[ "$(json "$TMP/folded.json" .parameters)" = 28032 ] ||
    fail "constant-folded export: $(json "$TMP/folded.json" .parameters) parameters, want 28032 (the head tied back)"
echo "ok: torch.onnx's default (constant-folded) export keeps the head tied"

# 10 AdamW steps of the imported model on 2 ranks (ssgd, batch 4 each: the 8 windows of
# 129 random ids, nanoGPT's headerless uint16 array, are every step's whole batch) give
# torch.optim.AdamW's loss after each step within 1e-2.
mkdir -p "$TMP/tokens"
/usr/bin/python3 -c "import numpy as np; np.random.default_rng(3).integers(0, 64, 129).astype(np.uint16).tofile('$TMP/tokens/train.bin')" ||
    fail "could not write the token file"
cp "$TMP/tokens/train.bin" "$TMP/tokens/val.bin"
jq -n --arg onnx "$TMP/o17/gpt.onnx" --arg data "$TMP/tokens" \
    '{name: "gpt-onnx-adamw", model: {onnx: $onnx}, dataset: {format: "tokens", path: $data, vocab_size: 64},
      algorithm: {name: "ssgd"}, workers: 2, batch_size: 4, epochs: 10, seed: 7, device: "cpu", log_every: 0,
      optimizer: {kind: "adamw", lr: 0.003, weight_decay: 0.1, betas: [0.9, 0.95]}}' >"$TMP/adamw.json"
$MPIRUN -np 2 $WORKER --spec "$TMP/adamw.json" --metrics "$TMP/adamw.jsonl" --summary "$TMP/adamw_summary.json" \
    --export-onnx "$TMP/trained.onnx" >"$TMP/adamw.log" 2>&1 || { tail -20 "$TMP/adamw.log"; fail "mpirun -np 2 pacer-worker (imported gpt, adamw) failed"; }
$TORCH_PY tests/tools/gpt_onnx_torch.py --adamw "$TMP/o17" "$TMP/tokens/train.bin" "$TMP/adamw.jsonl" \
    10 0.003 0.1 0.9 0.95 >"$TMP/adamw_cmp.log" 2>&1
rc=$?
grep -v -e Warning -e 'att = ' "$TMP/adamw_cmp.log"
[ $rc -eq 0 ] || fail "pacer's AdamW steps of the imported GPT differ from torch's (above)"
echo "ok: 10 AdamW steps of the imported GPT on 2 ranks give torch's losses within 1e-2"
# the trained model exported: torch (load_state_dict strict), pacer and onnxruntime-node
# give the same logits from it
mkdir -p "$TMP/export"
$TORCH_PY tests/tools/gpt_onnx_torch.py --export "$BUILD/tools/gpt_tool" "$TMP/trained.onnx" "$TMP/export" \
    >"$TMP/export.log" 2>&1
rc=$?
grep -v -e Warning -e 'att = ' "$TMP/export.log"
[ $rc -eq 0 ] || fail "the exported trained GPT's logits differ (above)"
echo "ok: the trained GPT exported: torch, pacer and onnxruntime agree on its logits"
jq '.dataset = {name: "mnist", path: "/nonexistent"} | .workers = 1' "$TMP/adamw.json" >"$TMP/images.json"
$WORKER --spec "$TMP/images.json" >"$TMP/images.log" 2>&1 && fail "a token model on images was accepted"
grep -q -e "takes token ids: dataset.format must be text or tokens" -e "model: gpt.onnx takes 16x1x1" "$TMP/images.log" ||
    { tail -5 "$TMP/images.log"; fail "a token model on images: not refused by name"; }
jq '.dataset.vocab_size = 65 | .workers = 1' "$TMP/adamw.json" >"$TMP/vocab.json"
printf '\100\000' >>"$TMP/tokens/val.bin" # id 64, past the model's 64 classes
$WORKER --spec "$TMP/vocab.json" >"$TMP/vocab.log" 2>&1 && fail "an id past the model's vocabulary was accepted"
grep -q "token id 64, model .* has a vocabulary of 64" "$TMP/vocab.log" ||
    { tail -5 "$TMP/vocab.log"; fail "an id past the model's vocabulary: not refused by name"; }
echo "ok: a token model on images, and an id past its vocabulary, are refused by name"

$TORCH_PY - "$TMP" <<'PY' || fail "could not write the refused models"
import sys
from onnx import TensorProto, helper, save
out = sys.argv[1]
table = helper.make_tensor("table", TensorProto.FLOAT, [4, 2], [0.0] * 8)
ids = helper.make_tensor_value_info("idx", TensorProto.INT64, ["N", 3])
logits = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
g = helper.make_graph([helper.make_node("Relu", ["idx"], ["y"])], "relu", [ids], [logits])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out + "/relu.onnx")
u8 = helper.make_tensor_value_info("idx", TensorProto.UINT8, ["N", 3])
e = helper.make_tensor_value_info("e", TensorProto.FLOAT, ["N", 3, 2])
g = helper.make_graph([helper.make_node("Gather", ["table", "idx"], ["e"])], "u8", [u8], [e], [table])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out + "/u8.onnx")
# an embedding of 2 rows under logits of 4 classes: ids up to 3 would read past it
small = helper.make_tensor("small", TensorProto.FLOAT, [2, 4], [0.5] * 8)
ids = helper.make_tensor_value_info("idx", TensorProto.INT64, ["N", 3])
e4 = helper.make_tensor_value_info("e", TensorProto.FLOAT, ["N", 3, 4])
g = helper.make_graph([helper.make_node("Gather", ["small", "idx"], ["e"])], "rows", [ids], [e4], [small])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out + "/rows.onnx")
# the causal mask's Where read by a Relu, not a Softmax
sq = helper.make_tensor("sq", TensorProto.FLOAT, [4, 4], [0.5] * 16)
tril = helper.make_tensor("tril", TensorProto.FLOAT, [4, 4], [float(j <= i) for i in range(4) for j in range(4)])
zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
ninf = helper.make_tensor("ninf", TensorProto.FLOAT, [], [float("-inf")])
ids = helper.make_tensor_value_info("idx", TensorProto.INT64, ["N", 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 4])
g = helper.make_graph([helper.make_node("Gather", ["sq", "idx"], ["e"]),
                       helper.make_node("Equal", ["tril", "zero"], ["mask"]),
                       helper.make_node("Where", ["mask", "ninf", "e"], ["w"]),
                       helper.make_node("Relu", ["w"], ["y"])], "where", [ids], [y], [sq, tril, zero, ninf])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out + "/where.onnx")
PY
"$WORKER" --check-onnx "$TMP/relu.onnx" >/dev/null 2>"$TMP/relu.err" && fail "ids read by a Relu were accepted"
grep -q "input 'idx' holds integer token ids, which only an embedding" "$TMP/relu.err" ||
    { cat "$TMP/relu.err"; fail "ids read by a Relu: not refused by name"; }
"$WORKER" --check-onnx "$TMP/u8.onnx" >/dev/null 2>"$TMP/u8.err" && fail "uint8 ids were accepted"
grep -q "input 'idx' is not a float tensor nor int64/int32 token ids" "$TMP/u8.err" ||
    { cat "$TMP/u8.err"; fail "uint8 ids: not refused by name"; }
"$WORKER" --check-onnx "$TMP/rows.onnx" >/dev/null 2>"$TMP/rows.err" && fail "an embedding of too few rows was accepted"
grep -q "an embedding of the token ids has 2 rows, fewer than the 4 classes" "$TMP/rows.err" ||
    { cat "$TMP/rows.err"; fail "an embedding of too few rows: not refused by name"; }
"$WORKER" --check-onnx "$TMP/where.onnx" >/dev/null 2>"$TMP/where.err" && fail "a causal mask read by a Relu was accepted"
grep -q "a causal mask read by Relu; only by Softmax" "$TMP/where.err" ||
    { cat "$TMP/where.err"; fail "a causal mask read by a Relu: not refused by name"; }
echo "ok: ids read by a Relu, uint8 ids, an embedding of fewer rows than classes and a causal mask read by a Relu are refused by name"
