"""bench/llmc_gpt2_data.py - the files llm.c's train_gpt2.c reads, made without the
internet (its own scripts download GPT-2's weights and a data set): a randomly initialised
GPT-2 checkpoint in llm.c's format and a pair of token shards from any text, which
pacer's `"format": "tokens"` data sets read too (bench/llmc_compare.sh runs both on them).

Usage: /usr/bin/python3 bench/llmc_gpt2_data.py OUTDIR TEXT [LAYERS HEADS EMBD MAXT VOCAB]
  (default GPT-2 124M: 12 12 768 1024 50257)
Writes OUTDIR/gpt2_124M.bin: a header of 256 int32 (magic 20240326, version 3, maxT, V, L,
NH, C, the vocabulary padded to a multiple of 128 as llm.c pads it), then the float32
parameters in llm.c's order (wte (Vp, C), wpe (maxT, C), then each kind of tensor for all
layers: ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb,
then lnfw, lnfb), initialised as GPT-2 is (normal(0, 0.02), the residual projections
0.02 / sqrt(2 L), biases 0, layer norms 1); and OUTDIR/train.bin, OUTDIR/val.bin: llm.c
shards (256 int32: magic 20240520, version 1, the count; then uint16 ids). The ids come
from TEXT's words, each distinct word the CRC-32 of its bytes modulo the vocabulary, so the
ids spread over the vocabulary as a real tokenizer's do (GPT-2's BPE is not here); the
last tenth of the text is the validation shard. Speed does not depend on which ids they
are: every step computes every logit of the vocabulary.
"""
import sys

import zlib

import numpy as np


def write_checkpoint(path, L, NH, C, maxT, V):
    Vp = (V + 127) // 128 * 128
    header = np.zeros(256, dtype=np.int32)
    header[:8] = [20240326, 3, maxT, V, L, NH, C, Vp]
    rng = np.random.default_rng(0)
    std, proj_std = 0.02, 0.02 / np.sqrt(2 * L)

    def normal(n, s):
        return (rng.standard_normal(n, dtype=np.float32) * np.float32(s)).astype(np.float32)

    shapes = [("wte", Vp * C, std), ("wpe", maxT * C, std), ("ln1w", L * C, "one"), ("ln1b", L * C, "zero"),
              ("qkvw", L * 3 * C * C, std), ("qkvb", L * 3 * C, "zero"), ("attprojw", L * C * C, proj_std),
              ("attprojb", L * C, "zero"), ("ln2w", L * C, "one"), ("ln2b", L * C, "zero"),
              ("fcw", L * 4 * C * C, std), ("fcb", L * 4 * C, "zero"), ("fcprojw", L * C * 4 * C, proj_std),
              ("fcprojb", L * C, "zero"), ("lnfw", C, "one"), ("lnfb", C, "zero")]
    count = 0
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for _, n, how in shapes:
            if how == "one":
                a = np.ones(n, dtype=np.float32)
            elif how == "zero":
                a = np.zeros(n, dtype=np.float32)
            else:
                a = normal(n, how)
            if _ == "wte":
                a.reshape(Vp, C)[V:] = 0  # llm.c's padded rows are zero
            f.write(a.tobytes())
            count += n
    return count, Vp


def write_shard(path, ids):
    header = np.zeros(256, dtype=np.int32)
    header[:3] = [20240520, 1, len(ids)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(ids, dtype=np.uint16).tobytes())


def main(argv):
    if len(argv) not in (3, 8):
        sys.exit(__doc__)
    out, text = argv[1], argv[2]
    L, NH, C, maxT, V = (int(a) for a in argv[3:8]) if len(argv) == 8 else (12, 12, 768, 1024, 50257)
    if not (0 < V <= 65536 and C % NH == 0):
        sys.exit("llmc_gpt2_data: the vocabulary must be 1..65536 (uint16 ids) and EMBD a multiple of HEADS")
    words = open(text, "rb").read().split()
    ids = [zlib.crc32(w) % V for w in words]
    cut = len(ids) * 9 // 10
    if len(ids) - cut < 5 * 4 * 64 + 1:  # llm.c's 5 validation batches of B=4, T=64
        sys.exit("llmc_gpt2_data: %s has too few words (%d) for the shards" % (text, len(ids)))
    write_shard(out + "/train.bin", ids[:cut])
    write_shard(out + "/val.bin", ids[cut:])
    n, Vp = write_checkpoint(out + "/gpt2_124M.bin", L, NH, C, maxT, V)
    print("llmc_gpt2_data: %d parameters (padded vocabulary %d), %d training and %d validation tokens"
          % (n, Vp, cut, len(ids) - cut))


if __name__ == "__main__":
    main(sys.argv)
