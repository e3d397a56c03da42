"""tests/tools/pyclient_st.py - the Python client's safetensors download and its freeze by
the module's own names, against a coordinator (tests/integration/coordinator_safetensors.sh).

Usage: PYTHONPATH=clients/python /usr/bin/python3 tests/tools/pyclient_st.py URL TOKEN TEXT_DIR JOB FILE OUT
  - first, without the coordinator: an exporter's own name for a parameter (an ONNX file
    whose 2.weight is renamed onnx::MatMul_99) is found by its values, and a freeze glob
    over it is sent as the file's names, while one over names the file keeps is sent as
    it is;
  - client.job(JOB).safetensors() is FILE's bytes (the job's JOBDIR/model.safetensors);
  - client.download_safetensors(JOB, OUT, names="hf", dtype="bf16") writes OUT (the shell
    compares it with the CLI's download of the same query) and returns its size;
  - client.train(module, ids, spec) with spec["freeze"] (and then spec["lora"]["targets"])
    naming the module's own parameters
    (a nanoGPT-style GPT of gpt_torch.py, 1 block, width 16, its lm_head.weight tied to
    transformer.wte.weight, which the ONNX file holds once under the latter name):
    "lm_head.weight" and "transformer.h.0.attn.*". The job succeeds, its summary counts
    the frozen tensors' elements (the table, the attention's four tensors) and the rest as
    trainable, and job.state_dict() has the frozen ones bit for bit as they were, the
    others moved. Then lora's targets "transformer.h.0.attn.c_attn.weight" and
    "transformer.h.0.mlp.c_fc.weight" (rank 4): the job succeeds with only the adapters'
    parameters trainable.
Exits 1 on a failed check, 77 when torch/onnx cannot be imported.
"""
import os
import sys

try:
    import numpy as np
    import onnx  # noqa: F401  (the client reads the file with it)
    import torch
except Exception as e:  # pragma: no cover - depends on the machine
    print("pyclient_st: torch/onnx/numpy not importable: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch  # noqa: E402
import pacer  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_renamed():
    import onnx
    from pacer import client as pc
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    m = onnx.load_from_string(pc.export_module(net, torch.zeros(2, 4)))
    for t in m.graph.initializer:
        if t.name == "2.weight":
            t.name = "onnx::MatMul_99"
    for n in m.graph.node:
        n.input[:] = ["onnx::MatMul_99" if i == "2.weight" else i for i in n.input]
    names = pc._initializer_names(m.SerializeToString(), net.state_dict())
    if names.get("2.weight") != "onnx::MatMul_99":
        fail("a renamed initializer was not found by its values: %s" % names)
    got = pc._freeze_for_file(["2.*", "0.*"], names)
    if got != ["onnx::MatMul_99", "2.bias", "0.*"]:
        fail("freeze ['2.*', '0.*'] sent as %s" % got)
    print("ok: a parameter the exporter renamed is frozen by the module's name: %s" % got)


def main(url, token, text, job_id, stored, out):
    check_renamed()
    client = pacer.Client(url, token)
    if client.job(job_id).safetensors() != open(stored, "rb").read():
        fail("job.safetensors() is not the job's model.safetensors")
    n = client.download_safetensors(job_id, out, names="hf", dtype="bf16")
    if n != os.path.getsize(out) or n <= 0:
        fail("download_safetensors returned %d for a file of %d bytes" % (n, os.path.getsize(out)))
    print("ok: job.safetensors() and download_safetensors(names='hf', dtype='bf16')")

    torch.manual_seed(3)
    L, H, E, T = 1, 2, 16, 16
    net = gpt_torch.GPT(L, H, E, T, 256, True, True)
    before = {k: v.detach().clone() for k, v in net.state_dict().items()}
    ids = torch.zeros(1, T, dtype=torch.long)
    spec = {"name": "pyclient-freeze", "dataset": {"format": "text", "path": text}, "batch_size": 8, "epochs": 1,
            "seed": 1, "device": "cpu", "log_every": 0, "optimizer": {"kind": "adamw", "lr": 0.01},
            "freeze": ["lm_head.weight", "transformer.h.0.attn.*"]}
    try:
        job = client.train(net, ids, spec, name="pyclient-freeze")
    except pacer.PacerError as e:
        fail("train with freeze by the module's names raised: %s" % e)
    if job.wait(out=None, timeout=600) != "SUCCEEDED":
        fail("the job ended %s: %s" % (job.state, job.info.get("reason")))
    frozen = {"transformer.wte.weight", "lm_head.weight", "transformer.h.0.attn.c_attn.weight",
              "transformer.h.0.attn.c_attn.bias", "transformer.h.0.attn.c_proj.weight",
              "transformer.h.0.attn.c_proj.bias"}
    params = dict(net.named_parameters())  # the tied table once, as lm_head.weight's storage
    want_frozen = sum(p.numel() for k, p in params.items() if k in frozen)
    want_total = sum(p.numel() for p in params.values())
    summary = job.refresh().get("summary") or {}
    got = (summary.get("frozen_parameters"), summary.get("trainable_parameters"))
    if got != (want_frozen, want_total - want_frozen):
        fail("summary frozen/trainable parameters %s, want %s" % (got, (want_frozen, want_total - want_frozen)))
    after = job.state_dict()
    for k, v in after.items():
        same = torch.equal(v, before[k])
        if k in frozen and not same:
            fail("%s is frozen but moved" % k)
        if k not in frozen and not k.endswith(".mask") and v.dtype.is_floating_point and same:
            fail("%s is not frozen but did not move" % k)
    print("ok: freeze by the module's names (lm_head.weight tied, attn.*): %d frozen of %d, unchanged; the rest "
          "trained" % (want_frozen, want_total))

    # lora's targets by the module's names: rank-4 adapters on two products, nothing else trains
    spec = dict(spec, name="pyclient-lora")
    del spec["freeze"]
    spec["lora"] = {"rank": 4, "alpha": 8, "targets": ["transformer.h.0.attn.c_attn.weight",
                                                       "transformer.h.0.mlp.c_fc.weight"]}
    try:
        job = client.train(net, ids, spec, name="pyclient-lora")
    except pacer.PacerError as e:
        fail("train with lora targets by the module's names raised: %s" % e)
    if job.wait(out=None, timeout=600) != "SUCCEEDED":
        fail("the lora job ended %s: %s" % (job.state, job.info.get("reason")))
    want = 4 * (E + 3 * E) + 4 * (E + 4 * E)  # each adapter: A (r x IN) and B (OUT x r)
    got = (job.refresh().get("summary") or {}).get("trainable_parameters")
    if got != want:
        fail("the lora job's trainable_parameters %s, want the adapters' %d" % (got, want))
    print("ok: lora targets by the module's names: %d adapter parameters trained" % want)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 7:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
