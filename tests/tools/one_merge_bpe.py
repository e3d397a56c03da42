"""tests/tools/one_merge_bpe.py - a GPT-2-style byte-level BPE tokenizer of one merge, for the
tests: GPT-2's byte alphabet (ids 0-255 in GPT-2's byte-to-unicode order) and the merge of
two symbols, 257 ids.

Usage: python3 tests/tools/one_merge_bpe.py DIR A B  - writes DIR/vocab.json (A + B is id 256)
and DIR/merges.txt ("A B")."""
import json
import sys


def main(argv):
    d, a, b = argv[1], argv[2], argv[3]
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for x in range(256):
        if x not in bs:
            bs.append(x)
            cs.append(256 + n)
            n += 1
    vocab = {chr(c): x for x, c in zip(bs, cs)}
    vocab[a + b] = 256
    with open(d + "/vocab.json", "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(d + "/merges.txt", "w") as f:
        f.write("#version: 0.2\n%s %s\n" % (a, b))


if __name__ == "__main__":
    main(sys.argv)
