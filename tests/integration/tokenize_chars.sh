# `pacer tokenize --tokenizer chars|bytes` (cli/tokenize.c): llm.c shards whose ids are the
# code-point-ordered characters of train.txt and val.txt (a 1.4 MB text of one-, two-,
# three- and four-byte characters, so the command's 1 MiB reads cut inside characters),
# read back by header and ids against Python's; bytes' ids are the bytes; the tokenizer
# saved as DIR/tokens.tokenizer. A "tokens" data set of the shards trains a tiny GPT whose
# checkpoints get that tokenizer beside them, so pacer-generate decodes its characters; a
# vocab_size below the tokenizer's is refused by name. Refused by name: an unknown kind,
# no --tokenizer, chars of invalid UTF-8 (the file and offset), a missing split.
. tests/lib.sh
PACER=$BUILD/pacer
[ -x "$PACER" ] || skip "$PACER not built (libcurl missing?)"
D=$TMP/ds
mkdir -p "$D"
python3 -c '
import random
r = random.Random(7)
w = ["a", "b", " ", "\n", "é", "ß", "日", "本", "🎉", "x", "ö"]
open("'"$D"'/train.txt", "w", encoding="utf-8").write("".join(r.choice(w) for _ in range(750000)))
open("'"$D"'/val.txt", "w", encoding="utf-8").write("val: ok ∑\n")'
"$PACER" tokenize "$D" --tokenizer chars >"$TMP/out.log" 2>&1 || { cat "$TMP/out.log"; fail "tokenize --tokenizer chars"; }
grep -q "tokens.tokenizer: chars, vocabulary 17" "$TMP/out.log" || { cat "$TMP/out.log"; fail "no vocabulary line"; }
# shard header and ids against the vocabulary Python builds the same way
check='
import struct, sys
d, kind = sys.argv[1], sys.argv[2]
tr, va = (open(d + "/" + s + ".txt", "rb").read() for s in ("train", "val"))
if kind == "chars":
    vocab = sorted(set(tr.decode() + va.decode()))
    ids = {c: i for i, c in enumerate(vocab)}
    enc = lambda b: [ids[c] for c in b.decode()]
else:
    enc = list
for s, text in (("train", tr), ("val", va)):
    b = open(d + "/" + s + ".bin", "rb").read()
    magic, ver, n = struct.unpack("<3i", b[:12])
    want = enc(text)
    got = list(struct.unpack("<%dH" % n, b[1024:]))
    if (magic, ver) != (20240520, 1) or n != len(want) or len(b) != 1024 + 2 * n or got != want:
        sys.exit("%s.bin: header %d %d %d, %d tokens expected; first difference at %s" % (s, magic, ver, n, len(want),
                 next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), "the length")))
print("ok", kind)'
python3 -c "$check" "$D" chars || fail "the chars shards are not the expected ids"
head -c 12 "$D/tokens.tokenizer" | grep -q "pacer-tokeni" || fail "tokens.tokenizer is not a tokenizer file"

B=$TMP/bytes
mkdir -p "$B"
printf 'h\303\251llo \377 bytes\n' >"$B/train.txt" && printf 'val\n' >"$B/val.txt"
"$PACER" tokenize "$B" --tokenizer bytes >"$TMP/out.log" 2>&1 || { cat "$TMP/out.log"; fail "tokenize --tokenizer bytes"; }
python3 -c "$check" "$B" bytes || fail "the bytes shards are not the bytes"
grep -q "tokens.tokenizer: bytes, vocabulary 256" "$TMP/out.log" || fail "no bytes vocabulary line"

refused() { # refused WHAT EXPECT ARGS...: exit 2 and EXPECT in the message
    what=$1 want=$2 && shift 2
    "$PACER" tokenize "$@" >"$TMP/r.log" 2>&1
    rc=$?
    [ $rc -eq 2 ] && grep -qF -- "$want" "$TMP/r.log" || { cat "$TMP/r.log"; fail "$what: exit $rc, not 2 naming '$want'"; }
}
refused "an unknown kind" "'words' is not bytes, chars" "$B" --tokenizer words
refused "no --tokenizer" "--tokenizer bytes, chars" "$B"
refused "invalid UTF-8 for chars" "train.txt" "$B" --tokenizer chars
grep -q "byte 7\|offset 7\|at 7" "$TMP/r.log" || { cat "$TMP/r.log"; fail "the invalid byte's offset is not named"; }
rm "$B/val.txt"
refused "a missing split" "val.txt" "$B" --tokenizer bytes

# a token data set with the tokenizer beside it: the checkpoints get it, generation decodes chars
S=$TMP/small
mkdir -p "$S"
for i in $(seq 40); do printf 'to be or not to be, é日🎉. '; done >"$S/train.txt"
head -c 248 "$S/train.txt" >"$S/val.txt" # 8 whole repeats of 31 bytes
"$PACER" tokenize "$S" --tokenizer chars >/dev/null 2>&1 || fail "tokenize the small text"
V=$(python3 -c "import sys; print(len(set(open('$S/train.txt', encoding='utf-8').read())))")
job() { # job VOCAB_SIZE
    jq -n --arg data "$S" --arg dir "$TMP/ck" --argjson v "$1" \
        '{name: "t", model: {gpt: {layers: 1, heads: 1, embd: 16, block_size: 8}},
          dataset: {format: "tokens", path: $data, vocab_size: $v, train_subset: 32, test_subset: 8}, batch_size: 8,
          epochs: 1, seed: 1, device: "cpu", log_every: 0, checkpoint: {every_steps: 4, dir: $dir}}' >"$TMP/job.json"
}
job $((V - 1))
$WORKER --spec "$TMP/job.json" >"$TMP/train.log" 2>&1 && fail "a vocab_size below the tokenizer's trained"
grep -q "dataset.vocab_size $((V - 1)) is smaller than the vocabulary of" "$TMP/train.log" ||
    { tail -5 "$TMP/train.log"; fail "the small vocab_size is not refused by name"; }
job $((V + 3))
$WORKER --spec "$TMP/job.json" >"$TMP/train.log" 2>&1 || { tail -20 "$TMP/train.log"; fail "training on the tokens failed"; }
cmp -s "$S/tokens.tokenizer" "$TMP/ck/t.tokenizer" || fail "the checkpoints' tokenizer is not the data set's"
printf 'to be é' | "$BUILD/pacer-generate" --spec "$TMP/job.json" --checkpoint-dir "$TMP/ck" --max-tokens 5 \
    --temperature 0 >"$TMP/gen.jsonl" 2>&1 || { cat "$TMP/gen.jsonl"; fail "pacer-generate on the tokens job failed"; }
tail -1 "$TMP/gen.jsonl" | jq -e '.done and .prompt_tokens == 7 and .tokens == 5' >/dev/null ||
    { cat "$TMP/gen.jsonl"; fail "generation did not encode the prompt as 7 characters and give 5 tokens"; }
echo "ok: chars and bytes shards are the expected ids; a token data set's tokenizer reaches generation"
