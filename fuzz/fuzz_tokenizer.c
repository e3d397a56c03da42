/* fuzz/fuzz_tokenizer.c - libFuzzer target for the saved tokenizer file (common/tokenizer.c's
 * tokenizer_parse: what a generation process reads beside a checkpoint). Build and run: make
 * fuzz-tokenizer.
 *
 * Invariants: a refusal is one non-empty line; an accepted file is canonical (serialised
 * again it is the same bytes) and reparses into an equal tokenizer; its vocabulary is at
 * least 1 and at most TOKENIZER_MAX_CHARS; whatever text it encodes (the input itself is
 * tried) decodes to the same bytes, and every id is below the vocabulary. Every input is
 * also a model's text for common/utf8.h's cleaner (what pacer-generate and eval_sample send
 * to JSON): all of it consumed when final, the output valid UTF-8 throughout, and the
 * stream's way (a first part, what it held back carried to the rest) the same text as at
 * once. The seeds in fuzz/corpus/tokenizer/ are a bytes, a chars and a small bpe-hf file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"
#include "utf8.h"

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

static void check_valid(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        const size_t l = utf8_char((const unsigned char *)s + i, n - i, NULL, NULL);
        if (!l) abort();
        i += l;
    }
}

static void check_sanitize(const char *data, size_t n)
{
    char *all = malloc(3 * n + 1), *part = malloc(3 * n + 1), *rest = malloc(3 * n + 1), *in = malloc(n + 1);
    if (!all || !part || !rest || !in) abort();
    /* NUL is valid UTF-8, but the outputs are compared as C strings */
    for (size_t i = 0; i < n; i++) in[i] = data[i] ? data[i] : 'x';
    if (utf8_sanitize(in, n, 1, all, 3 * n + 1) != n) abort();
    check_valid(all, strlen(all));
    const size_t k = n / 2, used = utf8_sanitize(in, k, 0, part, 3 * n + 1);
    if (used > k || k - used > 3) abort();
    if (utf8_sanitize(in + used, n - used, 1, rest, 3 * n + 1) != n - used) abort();
    const size_t pl = strlen(part);
    if (strncmp(all, part, pl) != 0 || strcmp(all + pl, rest) != 0) abort();
    free(all);
    free(part);
    free(rest);
    free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    check_sanitize((const char *)data, size);
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
