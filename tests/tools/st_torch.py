"""tests/tools/st_torch.py - safetensors read and written from the format's specification
(Hugging Face's safetensors README: an 8-byte little-endian header length N, N bytes of a
JSON object {name: {"dtype", "shape", "data_offsets": [BEGIN, END]}} with an optional
"__metadata__" of strings, then the data section, row-major little-endian, BEGIN and END
relative to its start, the ranges covering it without holes or overlaps), without the
safetensors package, for tests/integration/safetensors_torch.sh.

Usage: /usr/bin/python3 tests/tools/st_torch.py --check FILE.safetensors FILE.onnx L H E T
Reads FILE by the specification (checking every rule above), compares each tensor with the
ONNX file's initializer of its name bit for bit (every tensor one, the same shape), and
loads them into gpt_torch.py's nanoGPT module of that shape (vocabulary 256, tied head,
biases) by load_state_dict: no unexpected key, the only missing ones the tied
lm_head.weight and the module's causal-mask buffers (attn.mask), which hold no weights. Exits 0 when all hold, 1 otherwise, 77 when torch or onnx is missing.

Usage: /usr/bin/python3 tests/tools/st_torch.py --write OUT.safetensors IN.safetensors [EDIT]
Reads IN and writes its tensors back by the specification (the writer pacer's reader is
tested against), EDIT one of: none; drop:NAME (the tensor left out); extra:NAME (a 1-D
tensor of 3 zeros added); shape:NAME (its shape reversed: transposed dims).
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover - depends on the machine
    print("st_torch: torch not importable: %s" % e)
    sys.exit(77)

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64, "I32": np.int32,
          "BF16": np.uint16}


def read(path, dtypes=None):
    """the tensors of path (name -> numpy array, header order) and the metadata; a BF16
    tensor's array holds its 16-bit words (uint16); dtypes, a dict, gets each tensor's dtype"""
    raw = open(path, "rb").read()
    if len(raw) < 8:
        raise SystemExit("st_torch: %s: shorter than the 8-byte header length" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise SystemExit("st_torch: %s: header of %d bytes past the file's %d" % (path, n, len(raw)))
    text = raw[8: 8 + n].decode("utf-8")
    if not text.startswith("{"):
        raise SystemExit("st_torch: %s: the header does not start with '{'" % path)
    pairs = json.loads(text, object_pairs_hook=lambda kv: kv)
    names = [k for k, _ in pairs]
    if len(names) != len(set(names)):
        raise SystemExit("st_torch: %s: a name repeated" % path)
    data = raw[8 + n:]
    out, meta, ranges = {}, None, []
    for name, e in pairs:
        if name == "__metadata__":
            meta = dict(e)
            if not all(isinstance(v, str) for v in meta.values()):
                raise SystemExit("st_torch: __metadata__ holds a value that is not a string")
            continue
        e = dict(e)
        dt = np.dtype(DTYPES[e["dtype"]]).newbyteorder("<")
        b, end = e["data_offsets"]
        count = int(np.prod(e["shape"], dtype=np.int64))
        if not 0 <= b <= end <= len(data) or end - b != count * dt.itemsize:
            raise SystemExit("st_torch: %s: data_offsets %s of shape %s out of the data or of another size"
                             % (name, e["data_offsets"], e["shape"]))
        ranges.append((b, end))
        out[name] = np.frombuffer(data[b:end], dtype=dt).reshape(e["shape"])
        if dtypes is not None:
            dtypes[name] = e["dtype"]
    at = 0
    for b, end in sorted(ranges):
        if b != at:
            raise SystemExit("st_torch: a hole or an overlap at byte %d of the data" % at)
        at = end
    if at != len(data):
        raise SystemExit("st_torch: %d bytes of data past the last tensor" % (len(data) - at))
    return out, meta


def write(path, tensors, meta=None):
    """tensors (name -> numpy array, or a torch tensor of float32, bfloat16 or float16, in
    order) as safetensors (numpy arrays F32), the header padded to 8 bytes"""
    header, at, blobs = {}, 0, []
    if meta is not None:
        header["__metadata__"] = meta
    for name, a in tensors.items():
        dtype = "F32"
        if isinstance(a, torch.Tensor):
            dtype = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}[a.dtype]
            # the element's bits, little-endian: bfloat16 has no numpy type
            bits = a.contiguous().view(torch.int32 if dtype == "F32" else torch.int16).numpy()
            b = bits.astype(bits.dtype.newbyteorder("<")).tobytes()
        else:
            b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def check(st_path, onnx_path, L, H, E, T):
    try:
        import onnx
        from onnx import numpy_helper
        import gpt_torch as gt
    except (ImportError, SystemExit) as e:  # pragma: no cover
        print("st_torch: onnx not importable: %s" % e)
        return 77
    tensors, meta = read(st_path)
    if not meta or meta.get("format") != "pt":
        print("st_torch: __metadata__ %s lacks format pt" % meta)
        return 1
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(onnx_path).graph.initializer}
    bad = 0
    for name, a in tensors.items():
        if name not in inits:
            print("st_torch: %s is no initializer of the ONNX export" % name)
            bad += 1
        elif inits[name].shape != a.shape or not np.array_equal(inits[name].view(np.uint32), a.view(np.uint32)):
            print("st_torch: %s %s differs from the ONNX initializer %s" % (name, a.shape, inits[name].shape))
            bad += 1
    net = gt.GPT(L, H, E, T, 256, True, True)
    sd = {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
    missing, unexpected = net.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k != "lm_head.weight" and not k.endswith(".attn.mask")]
    if missing or unexpected:
        print("st_torch: load_state_dict: missing %s, unexpected %s" % (missing, unexpected))
        bad += 1
    for k, v in net.state_dict().items():
        if k in sd and not torch.equal(v, sd[k]):
            print("st_torch: %s not loaded as written" % k)
            bad += 1
    print("st_torch: %d tensors, %d floats, read by the specification: %s" %
          (len(tensors), sum(a.size for a in tensors.values()), "equal to the ONNX export's, loaded by torch"
           if not bad else "%d problems" % bad))
    return 1 if bad else 0


def rewrite(out, src, edit):
    tensors, meta = read(src)
    tensors = {k: np.array(v) for k, v in tensors.items()}
    kind, _, name = edit.partition(":")
    if kind == "drop":
        del tensors[name]
    elif kind == "extra":
        tensors[name] = np.zeros(3, dtype=np.float32)
    elif kind == "shape":
        tensors[name] = tensors[name].T.copy()
    write(out, tensors, meta)
    return 0


def main(argv):
    if len(argv) == 7 and argv[0] == "--check":
        return check(argv[1], argv[2], *map(int, argv[3:7]))
    if len(argv) in (3, 4) and argv[0] == "--write":
        return rewrite(argv[1], argv[2], argv[3] if len(argv) == 4 else "none")
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
