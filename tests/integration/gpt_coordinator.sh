# A language model through the job service: a GPT job on a text data set under a data root
# is submitted with `pacer submit`, checked at submission (the text's splits probed, the
# memory estimate counted from the GPT's fields), runs and SUCCEEDS with the language
# model's summary; a job on a token data set whose validation split is missing FAILS with
# the split named in its log; a BPE tokenizer file outside the data roots is refused (400), a
# train.txt linked out of the roots or a FIFO is refused at submission (422, named), the
# FIFO without holding an HTTP thread; a GPT's vocabulary above its tokenizer's (bytes, a
# token set's, a BPE's read at submission), heads not dividing embd and a vocabulary of 1 are
# refused at submission, by name, and so is a BPE whose vocab.json is a FIFO.
. tests/integration/coordinator_lib.inc
LIC=/usr/share/common-licenses
[ -r "$LIC/GPL-3" ] && [ -r "$LIC/LGPL-2.1" ] || skip "$LIC (Debian's base-files) is not here"
mkdir -p "$TMP/root/lic" "$TMP/root/tok"
cp "$LIC/GPL-3" "$TMP/root/lic/train.txt"
cp "$LIC/LGPL-2.1" "$TMP/root/lic/val.txt"
start_coord --data-root "$TMP/root"
# a BPE tokenizer's files are read by the workers like the data set: under a data root only
BASE=$(api_base)
jq -n --arg data "$TMP/root/lic" '{model: {gpt: {layers: 1}},
      dataset: {format: "text", path: $data, tokenizer: {kind: "bpe", vocab: "/etc/passwd", merges: "/etc/passwd"}}}' \
    >"$TMP/pw.json"
code=$(curl -s -o "$TMP/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$TMP/pw.json" \
    "$BASE/api/v1/jobs")
[ "$code" = 400 ] || { cat "$TMP/body"; fail "a tokenizer vocab of /etc/passwd: HTTP $code, want 400"; }
jq -r .detail "$TMP/body" | grep -q "^dataset.tokenizer.vocab: /etc/passwd is not under a data root" ||
    { cat "$TMP/body"; fail "the refusal does not name dataset.tokenizer.vocab"; }
grep -q 'root:x' "$TMP/body" && fail "the refusal quotes /etc/passwd"
echo "ok: a tokenizer file outside the data roots is refused (400, dataset.tokenizer.vocab)"

# post FILE - POST /api/v1/jobs with the spec FILE: the HTTP status (000: no answer within
# 20 s), the body in $TMP/body.FILE's base name
post() {
    curl -s -m 20 -o "$TMP/body.${1##*/}" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary @"$1" "$BASE/api/v1/jobs"
}
# A data set under the root whose train.txt is a link to a private file outside the roots,
# and one whose train.txt is a FIFO: each refused at submission, naming the file, the link's
# target never read or told; the FIFO never holds an HTTP thread (five submissions on it
# together, more than the API's threads, and /healthz answers meanwhile).
mkdir -p "$TMP/root/link" "$TMP/root/fifo"
printf 'the private text of another user\n' >"$TMP/secret" && chmod 600 "$TMP/secret"
ln -s "$TMP/secret" "$TMP/root/link/train.txt"
cp "$LIC/LGPL-2.1" "$TMP/root/link/val.txt"
mkfifo "$TMP/root/fifo/train.txt"
cp "$LIC/LGPL-2.1" "$TMP/root/fifo/val.txt"
for set in link fifo; do
    jq -n --arg data "$TMP/root/$set" '{model: {gpt: {layers: 1}}, dataset: {format: "text", path: $data}}' \
        >"$TMP/$set.json"
done
code=$(post "$TMP/link.json")
[ "$code" = 422 ] || { cat "$TMP/body.link.json"; fail "train.txt linked out of the data roots: HTTP $code, want 422"; }
jq -r .detail "$TMP/body.link.json" | grep -q "link/train.txt: a file that leaves the data roots" ||
    { cat "$TMP/body.link.json"; fail "the refusal of a linked train.txt does not name it"; }
grep -q 'private text' "$TMP/body.link.json" && fail "the refusal quotes the linked file"
echo "ok: a train.txt linked out of the data roots is refused at submission (422, named)"
pids=
for i in 1 2 3 4 5; do
    post "$TMP/fifo.json" >"$TMP/fifo.code.$i" &
    pids="$pids $!"
done
curl -sf -m 10 -o /dev/null "$BASE/healthz" || fail "/healthz did not answer while submissions on a FIFO ran"
for p in $pids; do wait "$p"; done
for i in 1 2 3 4 5; do
    code=$(cat "$TMP/fifo.code.$i")
    [ "$code" = 422 ] || { cat "$TMP/body.fifo.json"; fail "submission $i on a FIFO train.txt: HTTP $code, want 422"; }
done
jq -r .detail "$TMP/body.fifo.json" | grep -q "fifo/train.txt: a FIFO, not a regular file" ||
    { cat "$TMP/body.fifo.json"; fail "the refusal of a FIFO train.txt does not name it"; }
echo "ok: five submissions on a FIFO train.txt answered 422 at once, naming it; /healthz answered"

# A GPT's vocabulary no larger than its tokenizer's, its heads dividing its width: refused at
# submission, by the spec where it says the vocabulary (bytes 256, a token set's vocab_size),
# by the coordinator reading a BPE's files (GPT-2's byte alphabet and one merge: 257 ids),
# whose FIFO vocab.json is refused at once, by name.
mkdir -p "$TMP/root/bpe" "$TMP/root/bpefifo"
python3 tests/tools/one_merge_bpe.py "$TMP/root/bpe" t h
mkfifo "$TMP/root/bpefifo/vocab.json"
cp "$TMP/root/bpe/merges.txt" "$TMP/root/bpefifo/"
refused_as() { # refused_as CODE WANT GPT(JSON) DATASET(JSON)
    jq -n --argjson gpt "$3" --argjson ds "$4" '{model: {gpt: $gpt}, dataset: $ds}' >"$TMP/v.json"
    code=$(post "$TMP/v.json")
    [ "$code" = "$1" ] || { cat "$TMP/body.v.json"; fail "$2: HTTP $code, want $1"; }
    jq -r .detail "$TMP/body.v.json" | grep -qF "$2" || { cat "$TMP/body.v.json"; fail "the refusal does not say '$2'"; }
    echo "ok: refused ($1): $2"
}
LICDS=$(jq -n --arg p "$TMP/root/lic" '{format: "text", path: $p}')
bpe_ds() { jq -n --arg p "$TMP/root/lic" --arg d "$TMP/root/$1" \
    '{format: "text", path: $p, tokenizer: {kind: "bpe", vocab: "\($d)/vocab.json", merges: "\($d)/merges.txt"}}'; }
refused_as 400 "model.gpt.vocab_size: 300, more than the 256 ids of the data set's bytes" \
    '{"layers": 1, "vocab_size": 300}' "$LICDS"
refused_as 400 "model.gpt.vocab_size: 1, must be at least 2" '{"layers": 1, "vocab_size": 1}' "$LICDS"
refused_as 400 "model.gpt.heads: 3 does not divide model.gpt.embd 16" '{"layers": 1, "heads": 3, "embd": 16}' "$LICDS"
refused_as 400 "model.gpt.vocab_size: 70000, more than the 64 ids of the data set's tokens" \
    '{"layers": 1, "vocab_size": 70000}' "$(jq -n --arg p "$TMP/root/tok" '{format: "tokens", path: $p, vocab_size: 64}')"
refused_as 422 "model.gpt.vocab_size: 70000, more than the 257 ids of the data set's BPE tokenizer" \
    '{"layers": 1, "vocab_size": 70000}' "$(bpe_ds bpe)"
refused_as 422 "bpefifo/vocab.json: a FIFO, not a regular file" '{"layers": 1}' "$(bpe_ds bpefifo)"
jq -n --arg data "$TMP/root/lic" '{name: "gpt-lic", model: {gpt: {layers: 1, heads: 2, embd: 16, block_size: 16}},
      dataset: {format: "text", path: $data, train_subset: 128, test_subset: 32}, batch_size: 8, epochs: 1,
      seed: 2, device: "cpu", log_every: 0, optimizer: {kind: "adamw", lr: 0.003}}' >"$TMP/gpt.json"
id=$(submit "$TMP/gpt.json")
cli wait "$id" --timeout 300 || { cat "$STATE/jobs/$id/log"; fail "GPT job $id did not succeed"; }
[ "$(field_of "$id" summary.model)" = gpt ] || fail "summary.model $(field_of "$id" summary.model)"
[ "$(field_of "$id" summary.block_size)" = 16 ] || fail "summary.block_size $(field_of "$id" summary.block_size)"
at_most "test_loss (nats per token)" "$(field_of "$id" summary.test_loss)" 5.6
need_number "test_perplexity" "$(field_of "$id" summary.test_perplexity)"
echo "ok: a GPT job on text SUCCEEDED through the coordinator ($(field_of "$id" summary.train_tokens_per_s) tokens/s)"

python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<200H', *([7] * 200)))" >"$TMP/root/tok/train.bin"
jq -n --arg data "$TMP/root/tok" '{model: {gpt: {layers: 1}}, dataset: {format: "tokens", path: $data, vocab_size: 64}}' \
    >"$TMP/tok.json"
id2=$(submit "$TMP/tok.json")
cli wait "$id2" --timeout 300 >/dev/null 2>&1 && fail "job $id2 on a token set without val.bin succeeded"
await 60 "job $id2 to fail" is_state "$id2" FAILED
grep -q "neither val.bin nor val_\*.bin" "$STATE/jobs/$id2/log" || { cat "$STATE/jobs/$id2/log"; fail "job $id2's log does not name the missing split"; }
echo "ok: a token set without its validation split fails the job, the split named"
stop_coord
