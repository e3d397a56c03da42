/* fuzz/fuzz_tokenizer.c - libFuzzer target for the saved tokenizer file (common/tokenizer.c's
 * tokenizer_parse: what a generation process reads beside a checkpoint). Build and run: make
 * fuzz-tokenizer.
 *
 * Invariants: a refusal is one non-empty line; an accepted file is canonical (serialised
 * again it is the same bytes) and reparses into an equal tokenizer; its vocabulary is at
 * least 1 and at most TOKENIZER_MAX_CHARS; whatever text it encodes (the input itself is
 * tried) decodes to the same bytes, and every id is below the vocabulary. The seeds in
 * fuzz/corpus/tokenizer/ are a bytes, a chars and a small bpe-hf file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

static void check_refusal(const char *err)
{
    if (!err[0] || strchr(err, '\n')) abort();
}

static void check_round_trip(const tokenizer_t *t, const char *text, size_t len)
{
    uint32_t *ids = NULL;
    size_t n = 0, back_len = 0;
    char err[512] = "", *back = NULL;
    if (tokenizer_encode(t, text, len, &ids, &n, err, sizeof err) != 0) {
        check_refusal(err);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= (uint32_t)tokenizer_vocab_size(t)) abort();
    if (tokenizer_decode(t, ids, n, &back, &back_len, err, sizeof err) != 0) abort();
    if (back_len != len || memcmp(back, text, len) != 0) abort();
    free(ids);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    tokenizer_t *t = tokenizer_parse((const char *)data, size, "f", err, sizeof err);
    if (!t) {
        check_refusal(err);
        return 0;
    }
    const int v = tokenizer_vocab_size(t);
    if (v < 1 || v > TOKENIZER_MAX_CHARS) abort();
    char *buf = NULL;
    size_t len = 0;
    if (tokenizer_serialize(t, &buf, &len, err, sizeof err) != 0) abort();
    if (len != size || memcmp(buf, data, size) != 0) abort();
    tokenizer_t *again = tokenizer_parse(buf, len, "f", err, sizeof err);
    if (!again || !tokenizer_equal(t, again)) abort();
    check_round_trip(t, (const char *)data, size);
    tokenizer_free(again);
    tokenizer_free(t);
    free(buf);
    return 0;
}
