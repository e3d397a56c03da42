"""tests/tools/onnx_conformance_table.py - how many of ONNX's own float32 conformance cases
of the operators pacer supports pass, per operator and per operator family, with every
refusal counted by its reason: the figures docs/TESTING.md quotes, rerunnable.

Usage: /usr/bin/python3 tests/tools/onnx_conformance_table.py [--worker PATH] [--suite DIR]
                                                              [--results TSV] [--family-only]
  --worker   pacer-worker (default build/pacer-worker)
  --suite    libonnx-testdata's data directory (default /usr/share/libonnx-testdata/data)
  --results  also write one line per case there: exit status, operators, case, reason

Which cases count: those of node/ and pytorch-converted/ whose data is float32 (the first
graph input and every output float32, the other inputs float32 or the INT64 indices, shapes
and bounds some operators take: cases of integer, boolean, double and half data are other
types' tests, not the operator's) and whose operators are all ones pacer maps
(`pacer-worker --list-ops`: the operator table's rows, and the operators it folds). A case
is counted under the operator its directory names (test_conv_with_strides_padding ->
Conv; the _expanded cases, which spell an operator out in others, under the operator they
spell out); every case runs through `pacer-worker --onnx-case`: exit 0 passed, 1
mismatched, 2 refused (its reason, the first line of its message, shortened to its kind),
anything else crashed. The families group operators as issue 59 counts them.
Needs python3-onnx (to read the graphs' types); exits 77 without it.
"""

import argparse
import collections
import os
import re
import subprocess
import sys

try:
    import onnx
except ImportError:
    print("skip: python3-onnx is not importable", file=sys.stderr)
    sys.exit(77)

FAMILIES = [
    ("convolutional", ["Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization",
                       "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "HardSwish", "Dropout", "Gemm",
                       "Flatten", "Pad", "Concat", "Add", "Mul"]),
    ("transformer", ["LayerNormalization", "Softmax", "LogSoftmax", "MatMul", "Gather", "Expand", "Erf", "Where"]),
    ("elementwise", ["Sub", "Div", "Exp", "Neg", "Sqrt", "Reciprocal", "Abs", "Pow", "Identity"]),
    ("movement and reduction", ["Reshape", "Transpose", "Slice", "Split", "Squeeze", "Unsqueeze", "ReduceMean",
                                "ReduceSum"]),
    ("folded (shape arithmetic)", ["Shape", "Cast", "Constant", "ConstantOfShape", "Equal", "Mod", "Not", "Range",
                                   "ScatterND"]),
]

# The directory name's operator part, longest first (test_reduce_mean_... is ReduceMean).
DIR_OPS = {
    "averagepool": "AveragePool", "avgpool": "AveragePool", "maxpool": "MaxPool", "globalaveragepool":
    "GlobalAveragePool", "globalmaxpool": "GlobalMaxPool", "batchnorm": "BatchNormalization",
    "batchnormalization": "BatchNormalization",
    "layer_normalization": "LayerNormalization", "logsoftmax": "LogSoftmax", "log_softmax": "LogSoftmax",
    "softmax": "Softmax", "reduce_mean": "ReduceMean", "reduce_sum": "ReduceSum", "leakyrelu": "LeakyRelu",
    "hardsigmoid": "HardSigmoid", "hardswish": "HardSwish", "constantofshape": "ConstantOfShape",
    "conv": "Conv", "convtranspose": "ConvTranspose", "matmul": "MatMul", "gemm": "Gemm", "scatternd": "ScatterND",
}


def supported_ops(worker):
    """The operators `--list-ops` names (first column of its table, both rows' kinds)."""
    out = subprocess.run([worker, "--list-ops"], capture_output=True, text=True, check=True).stdout
    ops = set()
    for line in out.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        first = re.sub(r"\([^)]*\)", "", cells[0])
        for w in re.split(r"[,\s]+", first):
            if re.fullmatch(r"[A-Z][A-Za-z]+", w) and w not in ("ONNX",):
                ops.add(w)
    return ops


def graph_ops(g):
    ops = []
    for n in g.node:
        if n.op_type not in ops:
            ops.append(n.op_type)
    return ops


def elem(v):
    return v.type.tensor_type.elem_type if v.type.HasField("tensor_type") else -1


def all_float32(g):
    """Float32 data in and out: the first input and every output float32, the other inputs
    float32 or INT64 (the indices, shapes and bounds some operators take as inputs)."""
    inits = {t.name for t in g.initializer}
    ins = [v for v in g.input if v.name not in inits]
    F, I = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64
    return (bool(ins) and elem(ins[0]) == F and all(elem(v) in (F, I) for v in ins[1:]) and
            all(elem(v) == F for v in g.output))


def case_operator(name, ops):
    """The operator a case tests: from its directory name, else its graph's only operator."""
    base = re.sub(r"^test_", "", name).lower()
    for key in sorted(DIR_OPS, key=len, reverse=True):
        if base.startswith(key):
            return DIR_OPS[key]
    for op in ops:
        if op.lower() == base.split("_")[0] or base.startswith(op.lower()):
            return op
    if len(ops) == 1:
        return ops[0]
    return ",".join(ops)


def reason_kind(w):
    """A refusal's first line shortened to its kind (no node names, no data set)."""
    w = re.sub(r"^pacer-worker: --onnx-case [^:]*: ", "", w)
    m = re.search(r"opset (-?\d+) is not supported", w)
    if m:
        return "opset " + m.group(1) + " (pacer reads 6 to 17)"
    m = re.search(r"operator ([A-Za-z0-9_]+) is not supported", w)
    if m:
        return "operator " + m.group(1)
    w = re.sub(r"node '[^']*' \(([A-Za-z]+)\):? ?", "", w)
    w = re.sub(r"^(onnx: )?", "", w)
    w = re.sub(r"test_data_set_\d+/?", "", w)
    w = re.sub(r"'[^']*'", "'..'", w)
    w = re.sub(r"\(\d+(, \d+)*\)", "(..)", w)
    w = re.sub(r"-?\b\d+\b", "#", w)
    return w[:90]


def run_case(worker, case):
    p = subprocess.run([worker, "--onnx-case", case], capture_output=True, text=True)
    err = p.stderr.strip().splitlines()
    return p.returncode, err[0] if err else (p.stdout.strip().splitlines() or [""])[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", default="build/pacer-worker")
    ap.add_argument("--suite", default=os.environ.get("ONNX_TESTDATA", "/usr/share/libonnx-testdata/data"))
    ap.add_argument("--results")
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.suite, "node")):
        print("skip: no libonnx-testdata under " + args.suite, file=sys.stderr)
        sys.exit(77)
    sup = supported_ops(args.worker)
    rows = []  # (operator, rc, reason, case, graph ops)
    skipped = collections.Counter()
    for sub in ("node", "pytorch-converted"):
        for name in sorted(os.listdir(os.path.join(args.suite, sub))):
            case = os.path.join(args.suite, sub, name)
            path = os.path.join(case, "model.onnx")
            if not os.path.isfile(path):
                continue
            g = onnx.load(path).graph
            ops = graph_ops(g)
            if not all_float32(g):
                skipped["not float32"] += 1
                continue
            if not all(o in sup for o in ops):
                skipped["an operator pacer does not map"] += 1
                continue
            rc, why = run_case(args.worker, case)
            rows.append((case_operator(name, ops), rc, reason_kind(why) if rc == 2 else "", sub + "/" + name,
                         ",".join(ops)))
    if args.results:
        with open(args.results, "w") as f:
            for op, rc, why, case, ops in rows:
                f.write("%d\t%s\t%s\t%s\t%s\n" % (rc, op, ops, case, why))

    per = collections.defaultdict(lambda: [0, 0, 0, 0, collections.Counter()])
    for op, rc, why, _, _ in rows:
        r = per[op]
        r[0] += 1
        if rc == 0:
            r[1] += 1
        elif rc == 2:
            r[3] += 1
            r[4][why] += 1
        else:
            r[2] += 1
    fam_of = {op: f for f, ops in FAMILIES for op in ops}
    print("| family | cases | passed | mismatched or crashed | refused |")
    print("|---|---|---|---|---|")
    fams = collections.OrderedDict((f, [0, 0, 0, 0]) for f, _ in FAMILIES)
    fams["other"] = [0, 0, 0, 0]
    for op, r in per.items():
        t = fams[fam_of.get(op, "other")]
        for i in range(4):
            t[i] += r[i]
    for f, t in fams.items():
        if t[0]:
            print("| %s | %d | %d (%.0f%%) | %d | %d |" % (f, t[0], t[1], 100.0 * t[1] / t[0], t[2], t[3]))
    print()
    print("| operator | cases | passed | mismatched or crashed | refused (why) |")
    print("|---|---|---|---|---|")
    for op in sorted(per):
        r = per[op]
        why = "; ".join("%d %s" % (c, w) for w, c in r[4].most_common())
        print("| %s | %d | %d | %d | %d%s |" % (op, r[0], r[1], r[2], r[3], " (" + why + ")" if why else ""))
    tot = [sum(r[i] for r in per.values()) for i in range(4)]
    print()
    print("TOTAL %d float32 cases of supported operators: %d passed, %d mismatched or crashed, %d refused "
          "(not counted: %s)" % (tot[0], tot[1], tot[2], tot[3],
                                 ", ".join("%d %s" % (c, w) for w, c in sorted(skipped.items()))))


if __name__ == "__main__":
    main()
