"""tests/tools/pyclient_train.py - the Python client (clients/python/pacer) against a real
coordinator, as a PyTorch user would use it (tests/integration/python_client.sh).

Usage: PYTHONPATH=clients/python /usr/bin/python3 tests/tools/pyclient_train.py URL TOKEN MNIST_DIR
  - pacer.Client(url, token).train(module, example_input, spec): a CNN with batch norm and
    dropout is exported, uploaded and trained (ssgd, 2 workers) to SUCCEEDED;
  - job.state_dict() loads into the module with load_state_dict(strict=True), changes its
    weights, and the module in torch gives the test accuracy pacer reported (within 0.1
    point, on the same test images);
  - the example input is the README's batch of 1, also for a module with BatchNorm1d
    (torch's batch norm refuses a batch of 1 in training mode), and the export prints
    nothing on stderr (torch's warnings silenced, even under warnings "always");
  - job.state_dict() includes num_batches_tracked (the module's count plus the job's
    steps), and a job fetched by id (client.job) gives a state_dict that loads strictly;
  - refusals come back as PacerError with the API's status and message: bytes that are
    not ONNX (400), a module with an operator pacer does not train (422, naming it and
    ending with what to do: update pacer, not yet (issue 44), or replace the module), a
    wrong token (401), a coordinator that is not there; a spec refused after the upload
    deletes the upload it made (GET /api/v1/models no longer lists it) and keeps a model
    that held the name before; a module with stochastic depth (torchvision's class) uploads
    as ai.pacer:StochasticDepth, its mode "batch" refused (422).
Exits 1 on a failed check, 77 when torch/onnx/numpy cannot be imported.
"""
import gzip
import os
import sys
import tempfile
import warnings

try:
    import numpy as np
    import onnx
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except Exception as e:  # pragma: no cover - depends on the machine
    print("pyclient_train: torch/onnx/numpy not importable: %s" % e)
    sys.exit(77)

import pacer

TEST_N = 512


def fail(msg):
    print("pyclient_train: FAIL: " + msg)
    sys.exit(1)


class Net(nn.Module):
    def __init__(self, act=F.relu):
        super().__init__()
        self.act = act
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 12, 5)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(12 * 5 * 5, 10)

    def forward(self, x):
        x = F.max_pool2d(self.act(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(self.act(self.conv2(x)), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


class NetBN1d(nn.Module):
    """Batch norm over (N, C): torch raises for a batch of 1 in training mode."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 32)
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.bn(self.fc1(torch.flatten(x, 1)))))


class StochasticDepth(nn.Module):
    """torchvision.ops.StochasticDepth's interface (p, mode; the client matches the class
    name), so that no torchvision is needed: identity here, the export is the client's."""

    def __init__(self, p, mode):
        super().__init__()
        self.p, self.mode = p, mode

    def forward(self, x):
        return x


class NetSD(Net):
    """A residual branch under stochastic depth, as in EfficientNet's blocks."""

    def __init__(self, mode="row"):
        super().__init__()
        self.branch = nn.Conv2d(6, 6, 3, padding=1)
        self.sd = StochasticDepth(0.2, mode)

    def forward(self, x):
        x = self.act(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x + self.sd(self.branch(x)), 2)
        x = F.max_pool2d(self.act(self.conv2(x)), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


def check_stochastic_depth(client):
    """A module with stochastic depth uploads (ai.pacer:StochasticDepth, no Bernoulli);
    mode "batch" is refused with a 422 naming the node's operator and the mode."""
    summary = client.upload_model("pyclient-sdepth", pacer.client.export_module(NetSD(), torch.randn(1, 1, 28, 28)))
    if not summary.get("parameters"):
        fail("the stochastic-depth module's upload has no parameters: %s" % summary)
    client.delete_model("pyclient-sdepth")
    print("ok: a module with stochastic depth uploads (%s parameters)" % summary["parameters"])
    expect_error("stochastic depth mode batch", 422, "(StochasticDepth): mode 'batch' is not supported",
                 lambda: client.upload_model("pyclient-sdepth-batch", pacer.client.export_module(
                     NetSD("batch"), torch.randn(1, 1, 28, 28))))


def stderr_of(fn):
    """fn()'s result and what was written to file descriptor 2 meanwhile (Python's
    warnings and anything torch's C++ side prints)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as t:
        os.dup2(t.fileno(), 2)
        try:
            result = fn()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        t.seek(0)
        return result, t.read().decode("utf-8", "replace")


def check_export():
    """A batch of 1 (the README's example) exports, the batch axis stays dynamic, and
    nothing reaches stderr."""
    warnings.simplefilter("always")  # torch's warnings would show every time
    for module in (Net(), NetBN1d()):
        what = type(module).__name__
        onnx_bytes, err = stderr_of(lambda: pacer.client.export_module(module, torch.randn(1, 1, 28, 28)))
        if err.strip():
            fail("exporting %s wrote to stderr:\n%s" % (what, err))
        dim = onnx.load_from_string(onnx_bytes).graph.input[0].type.tensor_type.shape.dim[0]
        if not dim.dim_param or dim.dim_value:
            fail("exporting %s: the input's batch axis is not dynamic: %s" % (what, dim))
        print("ok: %s exported from a batch of 1 (%d bytes, batch axis %s), nothing on stderr"
              % (what, len(onnx_bytes), dim.dim_param))


def check_refusal_hints(softplus_refusal):
    """A 422 naming an operator pacer does not know ends with what to do about it: from a
    real coordinator for Softplus (no row: replace the module); from the client's table,
    on the importer's own words, for an operator this coordinator trains (Clip, ReLU6's: a
    refusal of it means an older pacer), a transformer's and Bernoulli."""
    if not softplus_refusal.endswith("[Softplus: not supported: replace the module that exports it by one pacer "
                                     "trains (`pacer-worker --list-ops` lists them), or, for a layer that only "
                                     "matters in training (e.g. a random one), export it in inference form]"):
        fail("the Softplus refusal does not end with what to do: %s" % softplus_refusal)
    words = "node '/act/Clip': operator %s is not supported (supported: Conv, Relu)"
    for op, needle in (("Clip", "ReLU6 and Hardtanh export as Clip, supported by newer versions of pacer: update pacer"),
                       ("LayerNormalization", "pacer trains it since its transformer operators: update pacer"),
                       ("Bernoulli", "StochasticDepth"), ("Foo", "not supported: replace the module")):
        hint = pacer.client._refusal_hint(words % op)
        if hint is None or hint[0] != op or needle not in hint[1]:
            fail("the hint for %s is %r, want one naming it and saying %r" % (op, hint, needle))
    for detail in ("node 'm' (Mul): a constant operand is not supported (only two activations)", None, ""):
        if pacer.client._refusal_hint(detail) is not None:
            fail("a refusal that names no unknown operator got a hint: %r" % detail)
    print("ok: refusals naming an unknown operator say what to do (update pacer, issue 44, replace the module)")


def model_names(client):
    return {m.get("name") for m in client.models().get("models", [])}


def check_refused_spec(client, spec):
    """A spec the coordinator refuses after the upload: the upload this call made is
    deleted, a model that held the name before stays; the error is the refusal's."""
    bad = dict(spec, optimizer={"lr": 0})
    msg = expect_error("a refused spec", 400, "optimizer.lr",
                       lambda: client.train(Net(), torch.randn(1, 1, 28, 28), bad, name="pyclient-refused"))
    if "job refused: POST /api/v1/jobs" not in msg or "pyclient-refused uploaded for it was deleted" not in msg:
        fail("the refusal does not say the job was refused and its upload deleted: %s" % msg)
    if "pyclient-refused" in model_names(client):
        fail("a job refused at submission left its upload pyclient-refused in GET /api/v1/models")
    print("ok: the refused job's upload was deleted")
    client.upload_model("pyclient-kept", pacer.client.export_module(Net(), torch.randn(1, 1, 28, 28)))
    expect_error("a refused spec, the name held a model", 400, "pyclient-kept held a model before this upload",
                 lambda: client.train(Net(), torch.randn(1, 1, 28, 28), bad, name="pyclient-kept"))
    if "pyclient-kept" not in model_names(client):
        fail("a refused job deleted pyclient-kept, a model uploaded before it")
    print("ok: a model that held the name before the refused job is kept")


def idx(d, name):
    for f in (name + ".gz", name):
        p = os.path.join(d, f)
        if os.path.exists(p):
            raw = gzip.open(p).read() if p.endswith(".gz") else open(p, "rb").read()
            dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(raw[3])]
            return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * raw[3]).reshape(dims)
    fail("%s not in %s" % (name, d))


def expect_error(what, status, needle, fn):
    try:
        fn()
    except pacer.PacerError as e:
        if status is not None and e.status != status:
            fail("%s: status %s, expected %s (%s)" % (what, e.status, status, e))
        if needle not in str(e):
            fail("%s: message %r does not say %r" % (what, str(e), needle))
        print("ok: %s -> %s" % (what, e))
        return str(e)
    fail("%s: no error" % what)


def main():
    url, token, mnist = sys.argv[1], sys.argv[2], sys.argv[3]
    client = pacer.Client(url, token)
    torch.manual_seed(3)
    net = Net()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    spec = {"name": "pyclient", "dataset": {"name": "mnist", "path": mnist, "train_subset": 4096,
                                            "test_subset": TEST_N},
            "algorithm": {"name": "ssgd"}, "workers": 2, "epochs": 1, "batch_size": 32, "seed": 7}
    check_export()
    job = client.train(net, torch.randn(1, 1, 28, 28), spec)  # the README's example input
    if "model" in spec and spec["model"] is not None:
        fail("train() modified the caller's spec")
    for k in before:  # the export traced a copy: the caller's module is untouched
        if not torch.equal(before[k], net.state_dict()[k]):
            fail("train() changed the module's %s" % k)
    print("ok: uploaded %s (%s parameters, sha256 %s...), job %s"
          % (job.model.get("name"), job.model.get("parameters"), str(job.model.get("sha256"))[:12], job.id))
    state = job.wait(poll=0.5, timeout=300)
    if state != "SUCCEEDED":
        fail("job %s ended %s: %s" % (job.id, state, job.info.get("reason")))
    acc = (job.info.get("summary") or {}).get("test_accuracy")
    if acc is None:
        fail("job %s has no test_accuracy in its summary: %s" % (job.id, job.info.get("summary")))

    trained = job.state_dict()
    if set(trained) != set(net.state_dict()):
        fail("state_dict keys %s are not the module's %s" % (sorted(trained), sorted(net.state_dict())))
    steps = job.info["summary"].get("steps")
    if not isinstance(steps, int) or steps <= 0:
        fail("job %s's summary has no steps: %s" % (job.id, job.info["summary"]))
    if int(trained["bn1.num_batches_tracked"]) != int(before["bn1.num_batches_tracked"]) + steps:
        fail("bn1.num_batches_tracked is %s, want the module's %s + the job's %s steps"
             % (int(trained["bn1.num_batches_tracked"]), int(before["bn1.num_batches_tracked"]), steps))
    net.load_state_dict(trained, strict=True)
    by_id = client.job(job.id).state_dict()  # no module to compare with: the file's names
    fresh = Net()
    fresh.load_state_dict(by_id, strict=True)
    if not torch.equal(fresh.state_dict()["conv1.weight"], net.state_dict()["conv1.weight"]) or \
            int(by_id["bn1.num_batches_tracked"]) != steps:
        fail("client.job(%s).state_dict() differs from the trained module's" % job.id)
    print("ok: state_dict loads strictly (num_batches_tracked %d = the job's steps), also from client.job"
          % int(trained["bn1.num_batches_tracked"]))
    changed = [k for k in before if not torch.equal(before[k], net.state_dict()[k])]
    if "conv1.weight" not in changed or "fc.weight" not in changed or "bn1.running_mean" not in changed:
        fail("trained weights not loaded back: changed only %s" % changed)
    x = idx(mnist, "t10k-images-idx3-ubyte")[:TEST_N].astype(np.float32)
    y = torch.from_numpy(idx(mnist, "t10k-labels-idx1-ubyte")[:TEST_N].astype(np.int64))
    x = torch.from_numpy(((x / 255.0 - 0.1307) / 0.3081).astype(np.float32)).reshape(TEST_N, 1, 28, 28)
    with torch.no_grad():
        torch_acc = (net.eval()(x).argmax(1) == y).float().mean().item()
    print("ok: job %s SUCCEEDED, pacer's test accuracy %.4f, the module's in torch %.4f" % (job.id, acc, torch_acc))
    if acc < 0.5:
        fail("test accuracy %.4f after an epoch: the job did not train" % acc)
    if abs(torch_acc - acc) > 0.001 + 1e-9:
        fail("torch's accuracy %.4f differs from pacer's %.4f by more than 0.1 point" % (torch_acc, acc))

    expect_error("bytes that are not ONNX", 400, "ONNX", lambda: client.upload_model("junk", b"not a model"))
    msg = expect_error("an unsupported operator", 422, "operator Softplus is not supported",
                       lambda: client.train(Net(act=F.softplus), torch.randn(2, 1, 28, 28), spec))
    check_refusal_hints(msg)
    check_stochastic_depth(client)
    check_refused_spec(client, spec)
    expect_error("a wrong token", 401, "", lambda: pacer.Client(url, "wrong-" + token).models())
    expect_error("no coordinator", None, "unreachable", lambda: pacer.Client("http://127.0.0.1:1").models())
    print("ok: python client")


if __name__ == "__main__":
    main()
