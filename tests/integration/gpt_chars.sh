# A character-level language model: the built-in GPT (1 block, 2 heads, width 16, block 16)
# on a text data set with "tokenizer": "chars", trained a few steps by pacer-worker. The
# model's vocabulary is the text's distinct characters (train.txt and val.txt, UTF-8, a few
# outside ASCII), the summary says so, and the tokenizer is saved beside the checkpoint
# (NAME.tokenizer) with exactly those characters in code point order, so another process
# rebuilds the ids. The same with a small BPE (vocab.json and merges.txt). Refused by name: val.txt that is not UTF-8 (file and offset), a BPE
# tokenizer whose vocab.json is missing, an unknown tokenizer (with the near name), a
# model.gpt.vocab_size above the chars tokenizer's.
. tests/lib.sh
LIC=/usr/share/common-licenses
[ -r "$LIC/LGPL-2.1" ] || skip "$LIC/LGPL-2.1 (Debian's base-files) is not here"
mkdir -p "$TMP/text"
{ head -c 6000 "$LIC/LGPL-2.1"; printf 'caf\303\251 \342\202\254 \346\227\245\n'; } >"$TMP/text/train.txt"
{ tail -c 1500 "$LIC/LGPL-2.1"; printf '\303\251t\303\251\n'; } >"$TMP/text/val.txt"
want=$(python3 -c "import sys; print(len(set(open(sys.argv[1], encoding='utf-8').read() + open(sys.argv[2], encoding='utf-8').read())))" \
    "$TMP/text/train.txt" "$TMP/text/val.txt")
nchars=$want
spec() { # TOKENIZER(JSON) DATA
    jq -n --arg data "$2" --arg dir "$TMP/ck" --arg cache "$TMP/cache" --argjson tok "$1" \
        '{name: "chars", model: {gpt: {layers: 1, heads: 2, embd: 16, block_size: 16}},
          dataset: {format: "text", path: $data, tokenizer: $tok, train_subset: 64, test_subset: 16, cache_dir: $cache},
          batch_size: 8, epochs: 1, seed: 1, device: "cpu", log_every: 0,
          optimizer: {kind: "adamw", lr: 0.003}, checkpoint: {every_steps: 4, dir: $dir}}'
}
spec '"chars"' "$TMP/text" >"$TMP/job.json"
$WORKER --spec "$TMP/job.json" --summary "$TMP/summary.json" >"$TMP/job.log" 2>&1 ||
    { tail -20 "$TMP/job.log"; fail "pacer-worker (gpt, chars tokenizer) failed"; }
S="$TMP/summary.json"
[ "$(json "$S" .steps)" = 8 ] || fail "8 steps of 8 windows expected, got $(json "$S" .steps)"
[ "$(json "$S" .vocab_size)" = "$want" ] || fail "vocab_size $(json "$S" .vocab_size), the text has $want characters"
echo "ok: the GPT's vocabulary is the text's $want characters"
[ "$(ls "$TMP/cache" | grep -c '^tokens-.*\.bin$')" = 2 ] || fail "the two splits' ids are not kept in $TMP/cache: $(ls "$TMP/cache")"
$WORKER --spec "$TMP/job.json" --summary "$TMP/again.json" >"$TMP/again.log" 2>&1 ||
    { tail -20 "$TMP/again.log"; fail "pacer-worker from the kept ids failed"; }
[ "$(json "$TMP/again.json" .test_loss)" = "$(json "$S" .test_loss)" ] || fail "the kept ids trained to another test_loss"
echo "ok: the tokenized splits are kept in the cache as llm.c shards, and a second job on them trains alike"

T="$TMP/ck/chars.tokenizer"
[ -f "$TMP/ck/chars.ckpt" ] || fail "no checkpoint $TMP/ck/chars.ckpt"
[ -f "$T" ] || fail "no tokenizer file $T beside the checkpoint"
python3 - "$T" "$TMP/text/train.txt" "$TMP/text/val.txt" <<'PY' || fail "the saved tokenizer is not the text's characters"
import sys
data = open(sys.argv[1], 'rb').read()
head = b'pacer-tokenizer 1\nkind chars\n'
assert data.startswith(head), data[:40]
rest = data[len(head):]
line, rest = rest.split(b'\n', 1)
n = int(line.split(b' ')[1])
chars = rest[:n].decode('utf-8')
assert rest[n:] == b'\n', 'trailing bytes'
text = open(sys.argv[2], encoding='utf-8').read() + open(sys.argv[3], encoding='utf-8').read()
assert chars == ''.join(sorted(set(text))), 'characters differ'
PY
echo "ok: $T holds the sorted characters"

# a BPE tokenizer named by the spec: GPT-2's byte alphabet and one merge ("t h"), 257 ids
mkdir -p "$TMP/bpe"
python3 tests/tools/one_merge_bpe.py "$TMP/bpe" t h
rm -rf "$TMP/ck"
spec "{\"kind\": \"bpe\", \"vocab\": \"$TMP/bpe/vocab.json\", \"merges\": \"$TMP/bpe/merges.txt\"}" "$TMP/text" >"$TMP/bpejob.json"
$WORKER --spec "$TMP/bpejob.json" --summary "$TMP/bpe.json" >"$TMP/bpejob.log" 2>&1 ||
    { tail -20 "$TMP/bpejob.log"; fail "pacer-worker (gpt, bpe tokenizer) failed"; }
[ "$(json "$TMP/bpe.json" .vocab_size)" = 257 ] || fail "vocab_size $(json "$TMP/bpe.json" .vocab_size) with the BPE, want 257"
head -c 33 "$T" | grep -q 'kind bpe' || fail "$T is not the BPE's"
echo "ok: a BPE named by the spec trains the GPT over its 257 ids and is saved beside the checkpoint"

# refusals, by name, before training (exit 2)
mkdir -p "$TMP/bad"
cp "$TMP/text/train.txt" "$TMP/bad/train.txt"
printf 'ok \377 not utf-8\n' >"$TMP/bad/val.txt"
spec '"chars"' "$TMP/bad" >"$TMP/bad.json"
expect_error 2 "val.txt: byte 3 (0xFF) is not valid UTF-8" $WORKER --spec "$TMP/bad.json"
spec "{\"kind\": \"bpe\", \"vocab\": \"$TMP/none/vocab.json\", \"merges\": \"$TMP/none/merges.txt\"}" "$TMP/text" >"$TMP/bpe.json"
expect_error 2 "dataset.tokenizer: $TMP/none/vocab.json: no such file" $WORKER --spec "$TMP/bpe.json"
# a vocabulary larger than the chars tokenizer's, known only once the text is read
jq --argjson v $((nchars + 5)) '.model.gpt.vocab_size = $v' "$TMP/job.json" >"$TMP/big.json"
expect_error 2 "model.gpt.vocab_size: $((nchars + 5)), more than the $nchars ids of the data set's tokenizer" \
    $WORKER --spec "$TMP/big.json"
spec '"char"' "$TMP/text" >"$TMP/typo.json"
expect_error 2 "dataset.tokenizer: must be one of bytes, chars (did you mean chars?)" $WORKER --spec "$TMP/typo.json"
