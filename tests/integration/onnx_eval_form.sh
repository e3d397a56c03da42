# Networks exported in inference form, as most people export a module (model.eval(), then
# torch.onnx.export with its defaults: constant folding, no training mode; the batch axis
# dynamic), tests/tools/onnx_eval_form.py: timm's attention as timm writes it (dim 16, 2
# heads, 4 tokens: qkv reshaped to (B, N, 3, heads, d), permuted with the 3 first,
# unbound), torchvision's VisionTransformer at opsets 13 and 17 and SwinTransformer, small.
# onnx_families.sh's checks on each (set "evalform"): --check-onnx accepts the file; on a
# fixed batch of 8 pacer's evaluation and training logits, every parameter's gradient (the
# file's initializers mapped back to the module's parameters by their values: the folding
# renames a Linear's weight it transposed for MatMul) and the losses of 4 SGD steps match
# torch's float64 numbers from the same weights within onnx_families.py's named
# tolerances, and the losses fall. torchvision's full-size vit_b_16 and swin_t in this
# form: tests/integration/onnx_eval_form_224.sh (make test-slow).
. tests/lib.sh
FAMILIES_SET=evalform
export FAMILIES_SET
. tests/integration/onnx_families.sh
