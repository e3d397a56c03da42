"""tests/tools/onnx_vit.py - issue 44's ViT and ConvNeXt in their torchvision classes, small,
for tests/integration/onnx_vit.sh.

nets(): the networks of onnx_families.py's set "vit" (its --export and --compare do the
rest: float64 torch numbers from the file's weights, logits, every parameter gradient and
plain SGD losses against pacer's tools/onnx_grads):
  ViT       torchvision.models.vision_transformer.VisionTransformer(image_size 32, patch 4,
            2 layers, 2 heads, hidden 32, mlp 64, 10 classes, dropout 0): the class token
            expanded to the batch (Expand) and concatenated, the positional embedding
            broadcast-added, nn.MultiheadAttention's training export ((L, N, E) and
            (N * heads, L, d) views of the batch, its fused in_proj weight through a
            Transpose, the out-projection a Gemm of (L * N, E)), x[:, 0];
  ConvNeXt  torchvision.models.convnext.ConvNeXt with CNBlockConfig(16, 32, 1) and
            CNBlockConfig(32, None, 1), stochastic depth 0 (the client's
            ai.pacer:StochasticDepth), 10 classes: LayerNorm after a permute, Linear over the
            last axis (a MatMul by a Transpose of its weight), the layer scale, LayerNorm2d.
Usage: /usr/bin/python3 tests/tools/onnx_vit.py --attn-dropout P OUT.onnx
  The ViT above with attention_dropout P, exported as the Python client exports it (for the
  check that a Dropout on the attention weights imports, p > 0 too).
Usage: /usr/bin/python3 tests/tools/onnx_vit.py --big OUTDIR
  vit_b_16 and convnext_tiny at 224x224 (get_model(name, weights=None, num_classes=10)),
  through the client's export, into OUTDIR/NAME.onnx.
Exits 77 when torch, torchvision or onnx cannot be imported.
"""
import os
import sys

try:
    import torch
    import torchvision
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    from torchvision.models.vision_transformer import VisionTransformer
except Exception as e:  # pragma: no cover - depends on the machine
    print("onnx_families: torch/torchvision not importable: %s" % e)
    sys.exit(77)


def vit(attention_dropout=0.0):
    net = VisionTransformer(image_size=32, patch_size=4, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                            num_classes=10, dropout=0.0, attention_dropout=attention_dropout)
    # torchvision zeroes the head's weight: every other gradient of the first step would be 0
    torch.nn.init.normal_(net.heads.head.weight, std=0.2)
    return net


def convnext():
    return ConvNeXt(block_setting=[CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], stochastic_depth_prob=0.0,
                    num_classes=10)


def nets():
    return {"ViT": vit, "ConvNeXt": convnext}


def client_export():
    """The Python client's export_module (clients/python/pacer), from this checkout."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    from pacer.client import export_module
    return export_module


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--attn-dropout":
        torch.manual_seed(1)
        with open(sys.argv[3], "wb") as f:
            f.write(client_export()(vit(float(sys.argv[2])), torch.zeros(1, 3, 32, 32)))
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--big":
        for name in ("vit_b_16", "convnext_tiny"):
            net = torchvision.models.get_model(name, weights=None, num_classes=10)
            with open(os.path.join(sys.argv[2], name + ".onnx"), "wb") as f:
                f.write(client_export()(net, torch.zeros(1, 3, 224, 224)))
            print("%s: exported" % name)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
