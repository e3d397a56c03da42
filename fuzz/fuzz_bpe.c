/* fuzz/fuzz_bpe.c - libFuzzer target for GPT-2's BPE (common/bpe.c): the input is three
 * parts split by NUL bytes, VOCAB \0 MERGES \0 TEXT. The first byte picks how VOCAB is read:
 * as a whole vocab.json (odd), as a Hugging Face tokenizer.json (bit 2, then the rest is
 * the text), or as entries appended to a vocabulary of the 256 single
 * bytes (even: "{BYTES, VOCAB}"), so that merges and encoding are reached too.
 * Build and run: make fuzz-bpe.
 *
 * Invariants: a refusal is one non-empty line; a loaded tokenizer encodes any TEXT into ids
 * below its vocabulary size that decode to exactly TEXT's bytes, and the pre-tokenizer
 * always advances. Seeds: fuzz/corpus/bpe/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"

/* GPT-2's bytes_to_unicode of b, as JSON string content, into out. */
static int byte_json(int b, char *out)
{
    int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174, n = 0;
    for (int i = 0; i < b; i++) n += !((i >= 33 && i <= 126) || (i >= 161 && i <= 172) || i >= 174);
    unsigned cp = printable ? (unsigned)b : 256u + (unsigned)n;
    if (cp == '"' || cp == '\\') return sprintf(out, "\\%c", (char)cp);
    if (cp < 0x80) return sprintf(out, "%c", (char)cp);
    return sprintf(out, "%c%c", (char)(0xC0 | (cp >> 6)), (char)(0x80 | (cp & 0x3F)));
}

static char *with_bytes(const char *extra, size_t n, size_t *len)
{
    char *s = malloc(4096 + n);
    size_t k = (size_t)sprintf(s, "{");
    for (int b = 0; b < 256; b++) {
        k += (size_t)sprintf(s + k, "%s\"", b ? ", " : "");
        k += (size_t)byte_json(b, s + k);
        k += (size_t)sprintf(s + k, "\": %d", b);
    }
    if (n) s[k++] = ',';
    memcpy(s + k, extra, n);
    k += n;
    s[k++] = '}';
    *len = k;
    return s;
}

static void check_roundtrip(const bpe_t *b, const char *text, size_t len)
{
    for (size_t pos = 0; pos < len;) {
        size_t k = bpe_pretoken_len(text, len, pos);
        if (k < 1 || pos + k > len) abort();
        pos += k;
    }
    uint32_t *ids = NULL;
    size_t n = 0, blen = 0;
    char err[256], *back = NULL;
    if (bpe_encode(b, text, len, &ids, &n, err, sizeof err) != 0) abort();
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= (uint32_t)bpe_vocab_size(b)) abort();
    if (bpe_decode(b, ids, n, &back, &blen, err, sizeof err) != 0) abort();
    if (blen != len || memcmp(back, text, len) != 0) abort();
    free(ids);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    const char *z1 = memchr(p, 0, (size_t)(end - p));
    const char *merges = z1 ? z1 + 1 : end;
    const char *z2 = merges < end ? memchr(merges, 0, (size_t)(end - merges)) : NULL;
    const char *text = z2 ? z2 + 1 : end;
    size_t vlen = (size_t)((z1 ? z1 : end) - p), mlen = (size_t)((z2 ? z2 : end) - merges);
    size_t tlen = (size_t)(end - text), full_len = vlen;
    if (data[0] & 2) { /* the first part as a Hugging Face tokenizer.json */
        char err[256] = "";
        bpe_t *b = bpe_load_hf(p, vlen, err, sizeof err);
        if (!b && (!err[0] || strchr(err, '\n'))) abort();
        if (b) check_roundtrip(b, merges, (size_t)(end - merges));
        bpe_free(b);
        return 0;
    }
    char *vocab = (data[0] & 1) ? NULL : with_bytes(p, vlen, &full_len);
    char err[256] = "";
    bpe_t *b = bpe_load(vocab ? vocab : p, full_len, merges, mlen, err, sizeof err);
    if (!b && (!err[0] || strchr(err, '\n'))) abort();
    if (b) check_roundtrip(b, text, tlen);
    bpe_free(b);
    free(vocab);
    return 0;
}
