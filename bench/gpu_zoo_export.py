"""bench/gpu_zoo_export.py - the networks test_cuda_parity's zoo case imports on a GPU
machine (PACER_GPU_ZOO=DIR), exported here with Debian's torch 1.13 and torchvision 0.14
through the Python client's export_module, as users export them:

  /usr/bin/python3 bench/gpu_zoo_export.py DIR

torchvision's mobilenet_v2 and efficientnet_b0 (10 classes, 3x64x64: their last planes
2x2, so that batch norm there normalises over 4 values a sample; at 32x32 the planes are
1x1 and a small batch's statistics are ill-conditioned), and the ViT, the ConvNeXt and the
Swin stage of tests/tools/onnx_vit.py and onnx_swin.py (the small configurations make test
trains on the CPU, 3x32x32). Dropout and stochastic depth at p = 0: the
parity case compares the two backends, not masks. Exits 77 when torch, torchvision or
onnx cannot be imported.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tools"))
import onnx_families as fam  # noqa: E402  (exits 77 when torch/onnx are missing)
from onnx_families import torch  # noqa: E402


def networks():
    tv = fam.torchvision_models()
    import onnx_swin
    import onnx_vit
    nets = {"mobilenet_v2": (tv["mobilenet_v2"], 64), "efficientnet_b0": (tv["efficientnet_b0"], 64)}
    nets.update({"vit": (onnx_vit.vit, 32), "convnext": (onnx_vit.convnext, 32),
                 "swin": (onnx_swin.nets()["SwinStage"], 32)})
    return nets


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    export_module = fam.client_export()
    for i, (name, (make, size)) in enumerate(sorted(networks().items())):
        torch.manual_seed(200 + i)
        net = make()
        fam.no_randomness(net)
        data = export_module(net, torch.randn(2, 3, size, size))
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)
        print("%s: %d bytes" % (name, len(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
