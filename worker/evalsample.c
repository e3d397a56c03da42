/* worker/evalsample.c - see evalsample.h. */
#include "evalsample.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "utf8.h"

struct evalsample {
    tokenizer_t *tok;
    gen_state_t *gen;
    uint32_t *prompt, *out;
    size_t nprompt;
    gen_opts_t opts;
};

int evalsample_open(const job_spec_t *spec, tokenizer_t *tok, model_t *m, evalsample_t **out, char *err, size_t errlen)
{
    char why[1024];
    *out = NULL;
    if (!tok) {
        snprintf(err, errlen,
                 "eval_sample: the token data set %s has no tokenizer (tokens.tokenizer, written by pacer tokenize): "
                 "nothing turns the prompt into ids",
                 spec->dataset.path);
        return -1;
    }
    evalsample_t *s = calloc(1, sizeof *s);
    if (!s) {
        tokenizer_free(tok);
        snprintf(err, errlen, "eval_sample: out of memory");
        return -1;
    }
    s->tok = tok;
    s->opts = (gen_opts_t){.max_tokens = spec->eval_sample_tokens,
                           .temperature = 0,
                           .top_k = 0,
                           .seed = 0,
                           .vocab_limit = tokenizer_vocab_size(tok)};
    if (tokenizer_encode(tok, spec->eval_sample, strlen(spec->eval_sample), &s->prompt, &s->nprompt, why, sizeof why) !=
        0) {
        snprintf(err, errlen, "eval_sample: %s", why);
    } else if (s->nprompt == 0) {
        snprintf(err, errlen, "eval_sample: the %s tokenizer reads no token in it", tokenizer_kind_name(tok));
    } else if (!(s->out = malloc((size_t)s->opts.max_tokens * sizeof *s->out))) {
        snprintf(err, errlen, "eval_sample: out of memory");
    } else if (gen_open(m, &s->gen, why, sizeof why) != 0) {
        snprintf(err, errlen, "eval_sample: %s", why);
    } else {
        *out = s;
        return 0;
    }
    evalsample_free(s);
    return -1;
}

int evalsample_rebind(evalsample_t *s, model_t *m, char *err, size_t errlen)
{
    gen_close(s->gen);
    s->gen = NULL;
    return gen_open(m, &s->gen, err, errlen);
}

void evalsample_free(evalsample_t *s)
{
    if (!s) return;
    gen_close(s->gen);
    tokenizer_free(s->tok);
    free(s->prompt);
    free(s->out);
    free(s);
}

int evalsample_run(evalsample_t *s, char *text, size_t len, char *err, size_t errlen)
{
    size_t cut = 0;
    if (len == 0) return 0;
    text[0] = '\0';
    gen_reset(s->gen);
    const int n = gen_run(s->gen, s->prompt, s->nprompt, &s->opts, NULL, NULL, s->out, &cut, err, errlen);
    if (n < 0) return -1;
    char *dec = NULL;
    size_t dlen = 0;
    if (tokenizer_decode(s->tok, s->out, (size_t)n, &dec, &dlen, err, errlen) != 0) return -1;
    /* whole characters, U+FFFD for what is not UTF-8 (common/utf8.h): the record is JSON */
    utf8_sanitize(dec, dlen, 1, text, len);
    free(dec);
    return 0;
}
