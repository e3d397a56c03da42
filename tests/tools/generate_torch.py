"""tests/tools/generate_torch.py - pacer's greedy generation (build/pacer-generate) against
torch's greedy decoding from the same weights, for tests/integration/generate_torch.sh.

Usage: /usr/bin/python3 tests/tools/generate_torch.py CKPT NAMES L H E T PROMPT_FILE PACER_LINES
CKPT is a pacer checkpoint of a GPT of L blocks, H heads, width E and block T (bytes
tokenizer, vocabulary 256, tied head, biases), NAMES its tensors in layout order (names.txt
of tests/tools/gpt_tool), PACER_LINES pacer-generate's output at temperature 0. Loads the
parameters (after the 16-byte prefix and header_bytes of header) into gpt_torch.py's module
in float64 and decodes as nanoGPT's generate does: the last T tokens, the argmax of the last
position's logits, appended. Every token must be pacer's; a mismatch prints the margin
between torch's two best logits there (a near tie is float32's, not a bug).
Exits 0 when all are equal, 1 otherwise, 77 when torch cannot be imported.
"""
import json
import os
import struct
import sys

import numpy as np

try:
    import torch
except ImportError as e:
    print("skip: torch cannot be imported: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT  # noqa: E402


def load(ckpt, names, L, H, E, T):
    raw = open(ckpt, "rb").read()
    if raw[:8] != b"PACERCKP":
        raise SystemExit("generate_torch: %s is not a pacer checkpoint" % ckpt)
    hdr = struct.unpack_from("<I", raw, 12)[0]
    total = sum(n for _, n in names)
    flat = np.frombuffer(raw, dtype="<f4", count=total, offset=16 + hdr)
    net = GPT(L, H, E, T, 256, True, True).double()
    sd = net.state_dict()
    at = 0
    with torch.no_grad():
        for name, n in names:
            if name not in sd or sd[name].numel() != n:
                raise SystemExit("generate_torch: pacer's tensor %s (%d) is not the module's" % (name, n))
            sd[name].copy_(torch.from_numpy(flat[at: at + n].astype(np.float64)).view_as(sd[name]))
            at += n
    net.eval()
    return net


def main(argv):
    ckpt, names_path, L, H, E, T, prompt_file, lines = argv[1], argv[2], *map(int, argv[3:7]), argv[7], argv[8]
    names = [(l.split()[0], int(l.split()[1])) for l in open(names_path)]
    net = load(ckpt, names, L, H, E, T)
    got = [json.loads(l)["token"] for l in open(lines) if '"token"' in l]
    seq = list(open(prompt_file, "rb").read())
    want = []
    with torch.no_grad():
        for i in range(len(got)):
            logits = net(torch.tensor([seq[-T:]], dtype=torch.long))[0, -1]
            top = torch.topk(logits, 2)
            tok = int(top.indices[0])
            if tok != got[i]:
                print("FAIL: token %d: pacer %d, torch %d (torch's margin %.3g)" %
                      (i, got[i], tok, float(top.values[0] - top.values[1])))
                return 1
            want.append(tok)
            seq.append(tok)
    print("ok: %d greedy tokens equal torch's (%r)" % (len(want), bytes(want).decode("utf-8", "replace")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
