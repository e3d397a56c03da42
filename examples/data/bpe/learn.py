#!/usr/bin/env python3
"""Writes vocab.json and merges.txt beside this file: a small GPT-2 byte-level BPE (the
256 byte tokens in GPT-2's alphabet, then 256 merges learned on the GPL 3 of Debian's
base-files) for examples/gpt-bpe.json. Rerun to rebuild them; the same text gives the
same files. Pre-tokens as GPT-2's (an optional space joined to the word after it)."""
import collections, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = sys.argv[1] if len(sys.argv) > 1 else '/usr/share/common-licenses/GPL-3'
MERGES = 256

bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b)
        cs.append(256 + n)
        n += 1
byte_char = {b: chr(c) for b, c in zip(bs, cs)}
vocab = {byte_char[b]: b for b in range(256)}

data = open(TEXT, 'rb').read().decode('utf-8')
words = collections.Counter(re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+", data))
seqs = {w: [byte_char[b] for b in w.encode('utf-8')] for w in words}
merges = []
for _ in range(MERGES):
    pairs = collections.Counter()
    for w, k in words.items():
        s = seqs[w]
        for a, b in zip(s, s[1:]):
            pairs[a, b] += k
    if not pairs:
        break
    (a, b), _ = max(pairs.items(), key=lambda p: (p[1], p[0]))
    merges.append(a + ' ' + b)
    vocab[a + b] = len(vocab)
    for w in seqs:
        s, out, i = seqs[w], [], 0
        while i < len(s):
            if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(s[i])
                i += 1
        seqs[w] = out
with open(os.path.join(HERE, 'vocab.json'), 'w', encoding='utf-8') as f:
    json.dump(vocab, f, ensure_ascii=False)
with open(os.path.join(HERE, 'merges.txt'), 'w', encoding='utf-8') as f:
    f.write('#version: 0.2\n' + ''.join(m + '\n' for m in merges))
print(len(vocab), 'tokens,', len(merges), 'merges')
