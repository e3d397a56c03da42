/* worker/evalsample.h - the spec's eval_sample: at each evaluation rank 0 continues a
 * prompt greedily with the weights just evaluated, and the text goes with the evaluation's
 * metrics record, so a user sees a language model learn.
 *
 * Everything a sample needs (the prompt's ids, the generator of model/generate.h, whose
 * cache is the model's own activations, the output ids) is allocated once at start-up by
 * evalsample_open; a sample allocates only the decoded text's buffer (tokenizer_decode),
 * at evaluation time, never in a training step. The tokens are what `pacer-generate --temperature 0
 * --max-tokens eval_sample_tokens` gives from a checkpoint of the same weights (the same
 * gen_run, the same rule: tests/integration/eval_sample.sh compares them). */
#ifndef PACER_EVALSAMPLE_H
#define PACER_EVALSAMPLE_H

#include <stddef.h>

#include "model.h"
#include "spec.h"
#include "tokenizer.h"

typedef struct evalsample evalsample_t;

/* A sampler of spec's eval_sample over m (a language model; m must outlive it, and the
 * sample runs in its activations: between training steps only). tok is
 * the job's tokenizer (NULL: a token data set without one, refused) and is the sampler's
 * from here on, freed by it, even on failure. 0, or -1 with err naming eval_sample and
 * what is wrong (no tokenizer, a prompt the tokenizer cannot read, no memory). */
int evalsample_open(const job_spec_t *spec, tokenizer_t *tok, model_t *m, evalsample_t **out, char *err, size_t errlen);
void evalsample_free(evalsample_t *s);
/* The sampler over another model of the same shape (m must outlive it): a job's lora
 * samples from its merged weights (worker/init_weights.h). 0, or -1 with err. */
int evalsample_rebind(evalsample_t *s, model_t *m, char *err, size_t errlen);

/* The continuation by the model's current (host) weights as valid UTF-8 (bytes that are
 * none become U+FFFD) into text, cut at a character boundary to fit len. 0, or -1 with
 * err. */
int evalsample_run(evalsample_t *s, char *text, size_t len, char *err, size_t errlen);

#endif
