"""tests/tools/onnx_gpt_generate.py - an imported GPT's greedy text against PyTorch's, for
tests/integration/onnx_gpt_generate.sh.

Usage: /usr/bin/python3 tests/tools/onnx_gpt_generate.py --export OUT.onnx
Writes gpt_torch.py's nanoGPT-style module (2 blocks, 2 heads, width 32, block 16, the
byte vocabulary of 256, the head tied to the token embedding, random weights from seed 1)
as torch.onnx writes it at opset 17 (do_constant_folding off: the weights keep their
state_dict names), int64 ids (N, 16) in, logits (N, 16, 256) out.

Usage: /usr/bin/python3 tests/tools/onnx_gpt_generate.py --greedy TRAINED.onnx PROMPT_IDS GOT_IDS
TRAINED.onnx (the job's weights as pacer exported them) loaded into the module by
load_state_dict(strict=True), and nanoGPT's greedy decoding in float64 from the prompt
(comma-separated ids): each step the logits of the last 16 ids (idx[:, -16:]), the id of
the largest (torch.argmax: the first on ties, as pacer's lowest id), as many steps as
GOT_IDS (comma-separated, pacer's answer) holds. Equal token for token, or where they first
differ torch's logit for pacer's id within the logits tolerance (gpt_torch.TOL, relative to
the largest |logit|, doubled: pacer's float32 against torch's float64) of its best: a tie
float32 cannot break alike, named, past which the two decodings continue different texts.
Exits 0 when they agree, 1 otherwise, 77 when torch or onnx cannot be imported.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    import gpt_torch as gt
    import onnx
    from onnx import numpy_helper
except (ImportError, SystemExit) as e:  # pragma: no cover - depends on the machine
    print("onnx_gpt_generate: torch or onnx not importable: %s" % e)
    sys.exit(77)

L, H, E, T, V = 2, 2, 32, 16, 256


def module(dtype):
    torch.manual_seed(1)
    net = gt.GPT(L, H, E, T, V, True, True)
    with torch.no_grad():
        for name, p in net.named_parameters():
            norm = name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight"))
            p.copy_((1.0 if norm else 0.0) + 0.1 * torch.randn_like(p))
    return net.to(dtype)


def export(path):
    torch.onnx.export(module(torch.float32), (torch.zeros(2, T, dtype=torch.long),), path, opset_version=17,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["idx"], output_names=["logits"],
                      dynamic_axes={"idx": {0: "N"}, "logits": {0: "N"}})
    return 0


def greedy(trained, prompt, got):
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(trained).graph.initializer}
    if "lm_head.weight" not in inits and "transformer.wte.weight" in inits:
        inits["lm_head.weight"] = inits["transformer.wte.weight"]  # the tied head: one table
    net = module(torch.float64)
    missing = [k for k in net.state_dict() if k not in inits]
    if missing:
        print("onnx_gpt_generate: the trained file lacks %s" % missing)
        return 1
    net.load_state_dict({k: torch.from_numpy(inits[k].astype(np.float64)) for k in net.state_dict()}, strict=True)
    net.eval()
    idx = torch.tensor([prompt], dtype=torch.long)
    want = []
    with torch.no_grad():
        for i, p in enumerate(got):
            logits = net(idx[:, -T:])[0, -1]
            best = int(torch.argmax(logits))
            want.append(best)
            if best != p:
                gap = float(logits[best] - logits[p])
                tol = 2 * gt.TOL["logits"] * float(logits.abs().max())
                print("  token %d: torch %d, pacer %d, torch's logits %.9g and %.9g (gap %.3g, tolerance %.3g)"
                      % (i, best, p, float(logits[best]), float(logits[p]), gap, tol))
                if gap <= tol:
                    print("onnx_gpt_generate: a tie within float32's reach at token %d: the %d tokens before agree" % (i, i))
                    return 0
                print("onnx_gpt_generate: torch's greedy %s" % want)
                print("onnx_gpt_generate: pacer's         %s" % got[:i + 1])
                return 1
            idx = torch.cat([idx, torch.tensor([[best]], dtype=torch.long)], dim=1)
    print("onnx_gpt_generate: torch's greedy decoding gives pacer's %d tokens" % len(got))
    return 0


def main(argv):
    torch.set_num_threads(1)
    if len(argv) == 3 and argv[1] == "--export":
        return export(argv[2])
    if len(argv) == 5 and argv[1] == "--greedy":
        ids = lambda s: [int(x) for x in s.split(",") if x]
        return greedy(argv[2], ids(argv[3]), ids(argv[4]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
