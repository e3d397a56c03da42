# GPT-2's BPE (common/bpe.c) through `pacer tokenize`: on every file of a corpus (mixed
# scripts, emoji, whitespace runs, contractions, digits, long runs, invalid UTF-8) the ids of
# the llm.c shard it writes equal gpt-tokenizer's GPT-2 encoding (tests/bpe, make deps), and
# decode back to the file's bytes; vocab.json and merges.txt are rebuilt from the package's
# ranks; malformed tokenizer files and a missing --tokenizer are refused by name.
. tests/lib.sh
PACER=$BUILD/pacer
[ -x "$PACER" ] || skip "$PACER not built (libcurl missing?)"
command -v node >/dev/null 2>&1 || skip "node not installed"
[ -d tests/bpe/node_modules/gpt-tokenizer ] || skip "gpt-tokenizer not installed in tests/bpe (make deps)"
ORACLE="node tests/bpe/oracle.mjs"
$ORACLE export "$TMP" || fail "exporting GPT-2's vocab.json and merges.txt from gpt-tokenizer failed"
TOK="bpe:$TMP/vocab.json,$TMP/merges.txt"

C=$TMP/corpus
mkdir -p "$C"
printf "Hello world! I'm here, they'll go; we've done it, you're right, he'd say 's 't 're.\n" >"$C/english.txt"
printf "Don't SHOUT'S. It'S 'LL 'Ve — quotes ''' and '' end'\n" >"$C/contractions.txt"
printf "Digits 1 12 123 1234 12345 3.14159 1,000,000 ٣٤٥ ½ Ⅻ 0x1F\n" >"$C/digits.txt"
printf "Spaces   and\ttabs\t\t mixed \n\n\n   \n\r\n  trailing   " >"$C/whitespace.txt"
printf "日本語のテキスト、中文文本。한국어 텍스트 Привет мир; ٱلسلام عليكم שלום עולם ελληνικά हिन्दी ไทย\n" >"$C/scripts.txt"
printf "emoji 🎉🎉 👩‍👩‍👧 🇫🇷 ❤️ x🙂y combining é ñ\n" >"$C/emoji.txt"
printf "code: int main(void) { return a->b[i] != 0 && x <= 3; } // $%%^&*\n\tif (x) {\n\t\ty();\n\t}\n" >"$C/code.txt"
printf "   leading spaces, then !!!??? ... ---- ____ ==== ~~~~\n" >"$C/punct.txt"
printf "a" >"$C/one.txt"
python3 -c 'print(" ".join(["supercalifragilistic"] * 300) + " " * 5000 + "x" + "ab" * 3000 + "\n" * 100)' >"$C/long.txt"
# over pacer tokenize's 1 MiB read: pre-tokens are cut across reads only where it changes none
python3 -c 'import random; r = random.Random(5); w = ["the", " cat", "  ", "\n\n", "123", "日本", " 🎉", "don'"'"'t", "\t", "    ", "x", "!?"]; print("".join(r.choice(w) for _ in range(400000)))' >"$C/big.txt"
printf "invalid \377\376 bytes \300\200 and a cut \342\202 sequence \355\240\200 surrogate\n" >"$C/invalid.bin"

for f in "$C"/*; do
    d=$TMP/ds
    rm -rf "$d" && mkdir -p "$d"
    cp "$f" "$d/train.txt" && cp "$f" "$d/val.txt"
    "$PACER" tokenize "$d" --tokenizer "$TOK" >"$TMP/out.log" 2>&1 || { cat "$TMP/out.log"; fail "tokenize $(basename "$f")"; }
    [ "$($ORACLE roundtrip "$d/val.bin" "$f")" = 1 ] || fail "$(basename "$f"): $($ORACLE roundtrip "$d/val.bin" "$f")"
    case $f in *.bin) continue ;; esac # the oracle reads text as UTF-8: invalid bytes only round-trip
    r=$($ORACLE compare "$d/train.bin" "$f")
    [ "$r" = 1 ] || fail "pacer's ids differ from gpt-tokenizer's: $r"
done

# The shards are a token data set pacer-worker trains on (common/tokfile.c reads them).
if [ -x "$WORKER" ]; then
    mkdir -p "$TMP/lm"
    head -c 200000 "$C/big.txt" >"$TMP/lm/train.txt" && cat "$C"/*.txt | head -c 20000 >"$TMP/lm/val.txt"
    "$PACER" tokenize "$TMP/lm" --tokenizer "$TOK" >/dev/null 2>&1 || fail "tokenize the GPT's data set"
    jq -n --arg data "$TMP/lm" '{model: {gpt: {layers: 1, heads: 1, embd: 8, block_size: 16}},
          dataset: {format: "tokens", path: $data, vocab_size: 50257, train_subset: 64, test_subset: 16},
          batch_size: 8, epochs: 1, seed: 1, device: "cpu", log_every: 0}' >"$TMP/lm.json"
    $WORKER --spec "$TMP/lm.json" --summary "$TMP/lm.out" >"$TMP/lm.log" 2>&1 ||
        { tail -5 "$TMP/lm.log"; fail "pacer-worker did not train on pacer tokenize's shards"; }
fi

# The same files as one Hugging Face tokenizer.json (model.merges as [LEFT, RIGHT] pairs).
jq -n --slurpfile v "$TMP/vocab.json" --rawfile m "$TMP/merges.txt" \
    '{model: {type: "BPE", vocab: $v[0], merges: ($m | split("\n") | .[1:] | map(select(length > 0) | split(" ")))}}' \
    >"$TMP/tokenizer.json" || fail "jq: tokenizer.json"
d=$TMP/hf
mkdir -p "$d" && cp "$C/scripts.txt" "$d/train.txt" && cp "$C/emoji.txt" "$d/val.txt"
"$PACER" tokenize "$d" --tokenizer "bpe:$TMP/tokenizer.json" >"$TMP/hf.log" 2>&1 || { cat "$TMP/hf.log"; fail "tokenize with tokenizer.json"; }
r=$($ORACLE compare "$d/val.bin" "$C/emoji.txt")
[ "$r" = 1 ] || fail "tokenizer.json: pacer's ids differ from gpt-tokenizer's: $r"
printf '{"model": {"type": "WordPiece", "vocab": {}}}' >"$TMP/wp.json"
expect_refusal() { # WHAT TOKENIZER PATTERN
    "$PACER" tokenize "$d" --tokenizer "$2" >"$TMP/r.log" 2>&1 && fail "$1 was accepted"
    grep -q "$3" "$TMP/r.log" || { cat "$TMP/r.log"; fail "$1: the message does not say '$3'"; }
}
expect_refusal "a WordPiece tokenizer.json" "bpe:$TMP/wp.json" "tokenizer.json: not a BPE model"

# Refusals, each naming what is wrong.
d=$TMP/ds
expect_refusal() { # WHAT TOKENIZER PATTERN
    "$PACER" tokenize "$d" --tokenizer "$2" >"$TMP/r.log" 2>&1 && fail "$1 was accepted"
    grep -q "$3" "$TMP/r.log" || { cat "$TMP/r.log"; fail "$1: the message does not say '$3'"; }
}
printf '{"a": 0' >"$TMP/bad.json"
printf '{"a": -1}' >"$TMP/neg.json"
printf '#version: 0.2\nĠ\n' >"$TMP/bad.txt"
expect_refusal "no --tokenizer" "" "tokenizer bytes, chars, bpe:VOCAB,MERGES.* is required"
expect_refusal "truncated vocab.json" "bpe:$TMP/bad.json,$TMP/merges.txt" "vocab.json"
expect_refusal "a negative id" "bpe:$TMP/neg.json,$TMP/merges.txt" "is not an integer in"
expect_refusal "a merge line of one token" "bpe:$TMP/vocab.json,$TMP/bad.txt" "merges.txt line 1"
expect_refusal "a missing vocab" "bpe:$TMP/none.json,$TMP/merges.txt" "none.json"
rm -f "$d/val.txt"
expect_refusal "a missing val.txt" "$TOK" "val.txt"
echo "ok: pacer tokenize equals gpt-tokenizer on $(ls "$C" | wc -l) files and round-trips"
