/* model/generate.h - text generation from a trained GPT (model/gpt.h): an incremental
 * forward pass with a key/value cache; from any other language-model graph, its own forward
 * over the window; and the sampling rule.
 *
 * The training graph computes a whole window of block positions per sample; generating
 * token by token through it would cost the whole window per token. gen_feed instead runs one
 * position against the keys and values of the earlier positions, kept per request (the
 * cache: layers x block x embd floats each for K and V), reading the same weights by their
 * nanoGPT names from the model's fused parameters. Its logits are the training graph's logits
 * at that position (tests/unit/test_generate.c compares them).
 *
 * A window never holds more than block positions: once prompt and answer fill it, the next
 * token is computed from the last block tokens (the newest included) re-fed into an empty cache, which is
 * exactly nanoGPT's generate (idx[:, -block_size:] each step), so the tokens are the same as
 * recomputing the window; only then does a token cost a window.
 *
 * Any other language model (gen_open_graph: an imported ONNX graph whose input is a window of
 * T token ids and whose output is per-position logits over its vocabulary) generates through
 * the model's own forward, model_forward, the graph the worker trains, with no cache: each
 * token recomputes the window, its ids at positions 0.. and id 0 past them (a causal model's
 * logits at the last id do not read those), cropped to the last T ids as above. The tokens
 * are nanoGPT's generate's from the same weights; a token costs a window's forward.
 *
 * Sampling rule (gen_sample), deterministic for a seed:
 *   temperature 0: the id of the largest logit (the lowest id on ties): greedy decoding.
 *   temperature t > 0: the candidates are the top_k ids by logit (ties broken by the lower
 *     id; top_k 0 or >= vocab: every id); p_i = exp((l_i - l_max) / t) computed in double,
 *     and with u = rng_uniform(r) (one draw per token, common/rng.h seeded with the seed),
 *     the candidate chosen is the first, in increasing id order, whose running sum of p
 *     exceeds u * (sum of p); the last candidate if rounding leaves none.
 */
#ifndef PACER_GENERATE_H
#define PACER_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "gpt.h"
#include "model.h"
#include "rng.h"

#define GEN_MAX_TOKENS 1024       /* max_tokens of one request */
#define GEN_MAX_TOP_K 1048576     /* GPT_MAX_VOCAB */
#define GEN_MAX_TEMPERATURE 100.0 /* above it every distribution is flat to float precision */
#define GEN_ROWS 64               /* positions of a prompt computed at once */

typedef struct gen_state gen_state_t;

/* A generator over m (a GPT of shape g, its parameters loaded; m must outlive it): its cache
 * and scratch. 0, or -1 with err naming the tensor that is missing or of the wrong size. */
int gen_open(const model_t *m, const model_gpt_t *g, gen_state_t **out, char *err, size_t errlen);
/* A generator over the language-model graph m (gen_graph_check; m must outlive it, and its
 * activations are the generator's while it lives). 0, or -1 with err. */
int gen_open_graph(model_t *m, gen_state_t **out, char *err, size_t errlen);
/* Whether m is a language model gen_open_graph can run: token ids (an embedding of the input)
 * of T positions in, T positions of logits out. 0, or -1 with err saying what it takes. */
int gen_graph_check(const model_t *m, char *err, size_t errlen);
void gen_close(gen_state_t *s);
/* Empties the cache: the next token fed is at position 0. */
void gen_reset(gen_state_t *s);
/* Positions in the cache. */
int gen_position(const gen_state_t *s);
/* Runs token at the next position; *logits (vocab floats, the next token's scores) stay
 * valid until the next call. 0, or -1 with err: a token outside the vocabulary, or the
 * cache full (block positions). */
int gen_feed(gen_state_t *s, uint32_t token, const float **logits, char *err, size_t errlen);

/* The next token from logits (V of them) by the rule above; scratch holds V floats. */
uint32_t gen_sample(const float *logits, int V, double temperature, int top_k, rng_t *r, float *scratch);

typedef struct {
    int max_tokens; /* 1 .. GEN_MAX_TOKENS */
    double temperature;
    int top_k;
    uint64_t seed;
    /* 0, or the ids that may be sampled: the first vocab_limit (the tokenizer's vocabulary,
     * when the model's is larger: an id the tokenizer lacks could not be decoded) */
    int vocab_limit;
} gen_opts_t;

/* Called with each generated token and its index; a nonzero return stops generation. */
typedef int (*gen_token_fn)(void *ctx, uint32_t token, int index);

/* Generates up to o->max_tokens tokens after the n prompt ids (n >= 1; only the last block
 * are used, *cut set to how many were dropped), calling on_token for each, the ids into out
 * (o->max_tokens of room). Returns the count, or -1 with err. */
int gen_run(gen_state_t *s, const uint32_t *prompt, size_t n, const gen_opts_t *o, gen_token_fn on_token, void *ctx,
            uint32_t *out, size_t *cut, char *err, size_t errlen);

#endif
