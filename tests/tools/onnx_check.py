"""tests/tools/onnx_check.py - checks an ONNX file pacer-worker --export-onnx wrote, and
writes MNIST test images for the runtimes to compare on (tests/integration/onnx_train.sh).

Usage: /usr/bin/python3 tests/tools/onnx_check.py TRAINED.onnx SOURCE.onnx MNIST_DIR N OUTDIR
           [--module CLASS] [--pacer-logits FILE] [-- TRAINED.onnx SOURCE.onnx ... (another check)]
  - onnx.checker.check_model(full_check=True) accepts TRAINED.onnx;
  - it has SOURCE.onnx's initializers (names, shapes), at least one of them changed by
    training, and is in inference form: no Dropout, every BatchNormalization with one
    output;
  - writes OUTDIR/x.bin (the first N test images, normalised as pacer's loader does:
    (pixel/255 - 0.1307) / 0.3081, float32 LE) and OUTDIR/labels.bin (N uint8);
  - loads the trained initializers into onnx_export.py's MnistNet (--module: another
    class of onnx_export.py, e.g. one of --zoo's) with module.load_state_dict (their
    names are its state_dict keys) and writes its accuracy on those images in evaluation
    mode to OUTDIR/torch.json;
  - with --pacer-logits (pacer's logits for those images, N x classes float32 LE, from
    build/tools/onnx_logits), also how many of torch's predictions differ from pacer's
    ("predictions_differ" in torch.json).
Usage: /usr/bin/python3 tests/tools/onnx_check.py --images MNIST_DIR N OUTDIR
  writes only OUTDIR/x.bin and OUTDIR/labels.bin, as above (for build/tools/onnx_logits to
  give the --pacer-logits of a later check).
Prints what it checked; exits 1 on a failed check, 77 when onnx/numpy cannot be imported.
"""
import gzip
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except Exception as e:  # pragma: no cover - depends on the machine
    print("onnx_check: onnx/numpy not importable: %s" % e)
    sys.exit(77)


def fail(msg):
    print("onnx_check: " + msg)
    sys.exit(1)


def idx(path):
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(d, name):
    for f in (name + ".gz", name):
        if os.path.exists(os.path.join(d, f)):
            return os.path.join(d, f)
    fail("%s not in %s" % (name, d))


def images(mnist, n, out):
    """The first n MNIST test images, normalised as pacer's loader does, and their labels."""
    x = idx(find(mnist, "t10k-images-idx3-ubyte"))[:n].astype(np.float32)
    y = idx(find(mnist, "t10k-labels-idx1-ubyte"))[:n]
    x = ((x / 255.0 - 0.1307) / 0.3081).astype("<f4").reshape(n, 1, 28, 28)
    x.tofile(os.path.join(out, "x.bin"))
    y.astype(np.uint8).tofile(os.path.join(out, "labels.bin"))
    return x, y


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--images":
        images(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    # several checks, separated by "--", in one process (torch is imported once)
    group = []
    for a in sys.argv[1:] + ["--"]:
        if a != "--":
            group.append(a)
            continue
        check(group)
        group = []


def check(argv):
    if len(argv) < 5 or len(argv) % 2 == 0:
        fail("usage: onnx_check.py TRAINED.onnx SOURCE.onnx MNIST_DIR N OUTDIR [--module CLASS] [--pacer-logits FILE]"
             " [-- TRAINED.onnx ...]")
    trained, source, mnist, n, out = argv[0], argv[1], argv[2], int(argv[3]), argv[4]
    opts = dict(zip(argv[5::2], argv[6::2]))
    if set(opts) - {"--module", "--pacer-logits"}:
        fail("unknown options %s" % sorted(set(opts) - {"--module", "--pacer-logits"}))
    m = onnx.load(trained)
    onnx.checker.check_model(m, full_check=True)
    src = onnx.load(source)
    a = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    b = {t.name: numpy_helper.to_array(t) for t in src.graph.initializer}
    if sorted(a) != sorted(b):
        fail("initializers %s, the source has %s" % (sorted(a), sorted(b)))
    for k in a:
        if a[k].shape != b[k].shape or a[k].dtype != b[k].dtype:
            fail("initializer %s: %s %s, the source's %s %s" % (k, a[k].shape, a[k].dtype, b[k].shape, b[k].dtype))
    changed = [k for k in a if not np.array_equal(a[k], b[k])]
    if not changed:
        fail("no initializer changed: the trained weights are not in the file")
    for node in m.graph.node:
        if node.op_type == "Dropout":
            fail("node %s: Dropout left in the inference graph" % node.name)
        if node.op_type == "BatchNormalization" and len(node.output) != 1:
            fail("node %s: batch norm in training form (%d outputs)" % (node.name, len(node.output)))
    print("onnx_check: checker (full_check) accepts %s; %d initializers as the source's, %d trained; inference form"
          % (trained, len(a), len(changed)))
    x, y = images(mnist, n, out)

    import json
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx_export
    net = getattr(onnx_export, opts.get("--module", "MnistNet"))()
    state = {k: torch.from_numpy(v.copy()) for k, v in a.items()}
    missing, unexpected = net.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if not k.endswith("num_batches_tracked")]:
        fail("load_state_dict: missing %s, unexpected %s" % (missing, unexpected))
    net.eval()
    with torch.no_grad():
        pred = net(torch.from_numpy(x))
    acc = float((pred.argmax(1).numpy() == y).mean())
    print("onnx_check: %s.load_state_dict took the %d trained tensors; torch accuracy %.6f"
          % (type(net).__name__, len(a), acc))
    result = {"accuracy": acc}
    if "--pacer-logits" in opts:
        theirs = np.fromfile(opts["--pacer-logits"], dtype="<f4")
        if theirs.size != pred.numel():
            fail("%s: %d floats, want %d (N x classes)" % (opts["--pacer-logits"], theirs.size, pred.numel()))
        differ = int((theirs.reshape(pred.shape).argmax(1) != pred.argmax(1).numpy()).sum())
        result["predictions_differ"] = differ
        print("onnx_check: torch's predictions differ from pacer's on %d of %d images" % (differ, n))
    json.dump(result, open(os.path.join(out, "torch.json"), "w"))


if __name__ == "__main__":
    main()
