"""tests/tools/pyclient_lm.py - the Python client's train() with a language model: a
nanoGPT-style module (token and position embeddings over int64 ids, causal self-attention
with a registered lower-triangular mask, the head tied to the token embedding; written in
tests/tools/gpt_torch.py, 1 block, 2 heads, width 16, block 16) and an integer example
input, a (1, 16) tensor of int64 token ids, as a user writes them
(tests/integration/python_client_lm.sh).

Usage: PYTHONPATH=clients/python /usr/bin/python3 tests/tools/pyclient_lm.py URL TOKEN TEXT_DIR
  - pacer.Client(url, token).train(module, ids, spec) exports and uploads the module and
    submits a text job on TEXT_DIR (train.txt, val.txt; bytes as tokens) that ends
    SUCCEEDED;
  - job.state_dict() loads into the module with load_state_dict(strict=True): the tied
    table fills both of its names, the causal mask (a buffer the trained file need not
    carry) keeps the module's;
  - the module then gives, in torch, the validation loss the job's summary reports (nats per
    token over val.txt's windows, within 1e-3).
Exits 1 on a failed check, 77 when torch/onnx cannot be imported.
"""
import os
import sys

try:
    import numpy as np
    import onnx  # noqa: F401  (the client's state_dict reads the file with it)
    import torch
    import torch.nn.functional as F
except Exception as e:  # pragma: no cover - depends on the machine
    print("pyclient_lm: torch/onnx/numpy not importable: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT  # noqa: E402

import pacer  # noqa: E402

T = 16


def fail(msg):
    print("pyclient_lm: FAIL: " + msg)
    sys.exit(1)


def windows(path):
    data = np.frombuffer(open(path, "rb").read(), dtype=np.uint8).astype(np.int64)
    n = (len(data) - 1) // T
    return torch.from_numpy(data[np.arange(n)[:, None] * T + np.arange(T + 1)[None, :]])


def main(url, token, text):
    torch.manual_seed(3)
    net = GPT(1, 2, 16, T, 256, True, True)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    ids = torch.randint(0, 256, (1, T), dtype=torch.long)
    spec = {"name": "pyclient-lm", "dataset": {"format": "text", "path": text}, "batch_size": 8, "epochs": 2,
            "seed": 5, "log_every": 0, "device": "cpu", "optimizer": {"kind": "adamw", "lr": 0.01}}
    client = pacer.Client(url, token)
    try:
        job = client.train(net, ids, spec, name="pyclient-lm")
    except pacer.PacerError as e:
        fail("train(module, int64 ids, spec) raised: %s" % e)
    state = job.wait(poll=0.5, timeout=300, out=None)
    if state != "SUCCEEDED":
        fail("the job ended %s: %s" % (state, job.info.get("reason")))
    print("ok: train(module, int64 ids (1, %d), spec) trained the language model to SUCCEEDED" % T)
    try:
        net.load_state_dict(job.state_dict(), strict=True)
    except Exception as e:
        fail("job.state_dict() does not load strictly: %s: %s" % (type(e).__name__, e))
    if net.lm_head.weight is not net.transformer.wte.weight:
        fail("loading the state_dict untied the head from the embedding")
    if torch.equal(net.transformer.wte.weight, before["transformer.wte.weight"]):
        fail("the embedding came back untrained")
    for key in [k for k in before if k.endswith(".mask")]:
        if not torch.equal(net.state_dict()[key], before[key]):
            fail("the causal mask %s changed" % key)
    print("ok: job.state_dict() loads strictly, the head still tied, the mask the module's")
    val = windows(os.path.join(text, "val.txt"))
    net.eval()
    with torch.no_grad():
        logits = net(val[:, :-1])
        loss = float(F.cross_entropy(logits.reshape(-1, 256), val[:, 1:].reshape(-1)))
    want = job.refresh()["summary"]["test_loss"]
    print("  torch's validation loss of the trained weights %.6f, the job's test_loss %.6f" % (loss, want))
    if not abs(loss - want) <= 1e-3:
        fail("torch's validation loss %.6f of the trained weights is not the job's %.6f" % (loss, want))
    print("ok: the trained weights give the job's validation loss in torch")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
