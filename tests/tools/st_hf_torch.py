"""tests/tools/st_hf_torch.py - the built-in GPT's safetensors under Hugging Face GPT-2's names
and Conv1D layout, and in BF16, checked against torch with st_torch.py's reader and writer
(written from the format's specification), for tests/integration/safetensors_torch.sh.

Hugging Face GPT-2 names the tensors as nanoGPT does (transformer.h.0.attn.c_attn.weight,
...), but its four matrix products per block are Conv1D: weight [in, out], y = x W + b,
against nn.Linear's [out, in], y = x W^T + b. The module below is such a GPT-2 written here
(pre-norm blocks, erf GELU as pacer's, the head tied to the token embedding).

Usage: st_hf_torch.py --hf FILE.safetensors FILE.onnx GPT_TOOL OUTDIR TEXT L H E T
    FILE (pacer-worker --safetensors-names hf) against FILE.onnx (the same run's
    --export-onnx): each tensor under the initializer's name, the products transposed, all
    bit for bit; loaded by load_state_dict(strict=True) into the Conv1D module; its logits
    on 6 windows of TEXT against pacer's (GPT_TOOL --onnx FILE.onnx: pacer's forward pass)
    within the bound below.
Usage: st_hf_torch.py --bf16 FILE.safetensors FILE.onnx
    FILE (--safetensors-dtype bf16): every tensor BF16, the bits of torch's
    Tensor.bfloat16() of the ONNX initializer (round to nearest, ties to even).
Usage: st_hf_torch.py --write-hf OUT IN DTYPE [bare]
    IN (nanoGPT names, F32) written as Hugging Face's layout in DTYPE (f32, bf16, f16: torch
    tensors of that dtype); with bare, GPT2Model's names (no transformer. prefix, as the
    Hub's gpt2 model.safetensors) and its causal-mask buffers (h.N.attn.bias [1, 1, T, T],
    h.N.attn.masked_bias), which hold no weights.
Usage: st_hf_torch.py --write-rounded OUT IN DTYPE
    IN's tensors rounded to DTYPE by torch and written back as F32: what a DTYPE file of the
    same weights reads as.
Exits 0 when all hold, 1 otherwise, 77 when torch or onnx is missing.
"""
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_torch  # noqa: E402  (exits 77 without torch)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

PRODUCTS = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
DTYPE = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
# max |pacer - torch| / max |torch| of the logits, against torch in float64: pacer computes in
# float32, a dot product of K terms (K <= 4 E = 128 here) within about K x 6e-8 relative,
# a few dozen such operations deep: 1e-5 (gpt_torch.py's analysis for the same network).
# Where torch's own float32 run is further from float64, FACTOR times its error holds.
LOGITS_TOL = 1e-5
FACTOR = 4.0
WINDOWS = 6


def is_product(name):
    return ".h." in "." + name and any(name.endswith("." + p) for p in PRODUCTS)


class Conv1D(nn.Module):
    """Hugging Face's Conv1D: weight [in, out], y = x W + b"""

    def __init__(self, nin, nout):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(nin, nout))
        self.bias = nn.Parameter(torch.zeros(nout))

    def forward(self, x):
        return x @ self.weight + self.bias


class Attention(nn.Module):
    def __init__(self, E, H, T):
        super().__init__()
        self.c_attn, self.c_proj, self.H = Conv1D(E, 3 * E), Conv1D(E, E), H
        self.register_buffer("mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T), persistent=False)

    def forward(self, x):
        B, T, E = x.size()
        q, k, v = self.c_attn(x).split(E, dim=2)
        q, k, v = (a.view(B, T, self.H, E // self.H).transpose(1, 2) for a in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, E))


class MLP(nn.Module):
    def __init__(self, E):
        super().__init__()
        self.c_fc, self.c_proj = Conv1D(E, 4 * E), Conv1D(4 * E, E)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, E, H, T):
        super().__init__()
        self.ln_1, self.attn, self.ln_2, self.mlp = nn.LayerNorm(E), Attention(E, H, T), nn.LayerNorm(E), MLP(E)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """GPT2LMHeadModel's tensors (its tied lm_head not a tensor of its own)"""

    def __init__(self, L, H, E, T, V):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(V, E), wpe=nn.Embedding(T, E),
            h=nn.ModuleList([Block(E, H, T) for _ in range(L)]), ln_f=nn.LayerNorm(E)))

    def forward(self, idx):
        tr = self.transformer
        x = tr.wte(idx) + tr.wpe(torch.arange(0, idx.size(1), dtype=torch.long))
        for b in tr.h:
            x = b(x)
        return tr.ln_f(x) @ tr.wte.weight.T


def onnx_inits(path):
    import onnx
    from onnx import numpy_helper
    return {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(np.ascontiguousarray(a).view(np.uint32),
                                                 np.ascontiguousarray(b).view(np.uint32))


def check_hf(st_path, onnx_path, tool, out, text, L, H, E, T):
    dtypes = {}
    tensors, meta = st_torch.read(st_path, dtypes)
    inits = onnx_inits(onnx_path)
    bad = 0
    for name, a in tensors.items():
        want = inits.get(name)
        if want is not None and is_product(name):
            want = want.T
        if dtypes[name] != "F32" or want is None or not same_bits(a, np.asarray(want, dtype=np.float32)):
            print("st_hf_torch: %s %s %s: not the ONNX initializer%s" %
                  (name, dtypes[name], a.shape, " transposed (Conv1D)" if is_product(name) else ""))
            bad += 1
    net = GPT2(L, H, E, T, 256)
    try:
        net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()}, strict=True)
    except RuntimeError as e:
        print("st_hf_torch: the Conv1D GPT-2 does not load the file: %s" % e)
        return 1
    data = open(text, "rb").read()[: WINDOWS * T + 1]
    ids = np.array([list(data[w * T: w * T + T + 1]) for w in range(WINDOWS)], dtype=np.int32)
    ids.tofile(os.path.join(out, "ids.i32"))
    subprocess.run([tool, "--onnx", onnx_path, out], check=True)
    pacer = np.fromfile(os.path.join(out, "logits.f32"), dtype=np.float32).astype(np.float64)
    x = torch.from_numpy(ids[:, :T].astype(np.int64))
    with torch.no_grad():
        t64 = net.double()(x).numpy().ravel()
        t32 = net.float()(x).numpy().astype(np.float64).ravel()
    if pacer.size != t64.size:
        print("st_hf_torch: pacer's logits are %d numbers, torch's %d" % (pacer.size, t64.size))
        return 1
    scale = np.abs(t64).max()
    err, own = np.abs(pacer - t64).max() / scale, np.abs(t32 - t64).max() / scale
    tol = max(LOGITS_TOL, FACTOR * own)
    print("st_hf_torch: %d tensors in Conv1D's layout loaded by a GPT-2 module; logits: max |pacer - torch| / "
          "max |torch| = %.3g (torch's own float32 %.3g), bound %.3g" % (len(tensors), err, own, tol))
    if err > tol:
        bad += 1
    return 1 if bad else 0


def check_bf16(st_path, onnx_path):
    dtypes = {}
    tensors, _ = st_torch.read(st_path, dtypes)
    inits = onnx_inits(onnx_path)
    bad = 0
    for name, words in tensors.items():
        ref = inits.get(name)
        want = None if ref is None else torch.from_numpy(np.array(ref, dtype=np.float32)).bfloat16()
        if dtypes[name] != "BF16" or want is None or tuple(want.shape) != words.shape or \
                not np.array_equal(want.view(torch.int16).numpy().view(np.uint16), words):
            print("st_hf_torch: %s %s: not torch's bfloat16 of the ONNX initializer" % (name, dtypes[name]))
            bad += 1
    print("st_hf_torch: %d BF16 tensors%s" % (len(tensors), ", torch's rounding of the weights bit for bit"
                                              if not bad else ": %d differ" % bad))
    return 1 if bad else 0


def write_hf(out, src, dtype, bare):
    tensors, _ = st_torch.read(src)
    res = {}
    for name, a in tensors.items():
        t = torch.from_numpy(np.array(a.T if is_product(name) else a, dtype=np.float32)).to(DTYPE[dtype])
        res[name[len("transformer."):] if bare and name.startswith("transformer.") else name] = t
    if bare:
        T = tensors["transformer.wpe.weight"].shape[0]
        layers = {n.split(".")[2] for n in tensors if n.startswith("transformer.h.")}
        for i in sorted(layers, key=int):
            res["h.%s.attn.bias" % i] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
            res["h.%s.attn.masked_bias" % i] = torch.tensor(-1e4)
    st_torch.write(out, res, {"format": "pt"})
    return 0


def write_rounded(out, src, dtype):
    tensors, meta = st_torch.read(src)
    st_torch.write(out, {k: torch.from_numpy(np.array(v)).to(DTYPE[dtype]).float() for k, v in tensors.items()},
                   meta)
    return 0


def main(argv):
    try:
        if len(argv) == 10 and argv[0] == "--hf":
            return check_hf(*argv[1:6], *map(int, argv[6:10]))
        if len(argv) == 3 and argv[0] == "--bf16":
            return check_bf16(argv[1], argv[2])
    except ImportError as e:  # pragma: no cover - depends on the machine
        print("st_hf_torch: onnx not importable: %s" % e)
        return 77
    if len(argv) in (4, 5) and argv[0] == "--write-hf" and argv[3] in DTYPE:
        return write_hf(argv[1], argv[2], argv[3], len(argv) == 5 and argv[4] == "bare")
    if len(argv) == 4 and argv[0] == "--write-rounded" and argv[3] in DTYPE:
        return write_rounded(argv[1], argv[2], argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
