/* model/generate.h - text generation from a trained language model, built-in (model/gpt.h)
 * or imported alike: the model's own graph run position by position, and the sampling rule.
 *
 * A language model is a graph whose input is a window of T token ids (an embedding reads
 * them) and whose output is per-position logits over its vocabulary (gen_graph_check).
 * gen_feed runs each new position through the graph by model/decode.h's plan: every layer
 * computes that position alone, and attention reads the keys and values of the earlier
 * positions where the graph left them (its own k and v outputs are the cache). Its logits
 * are the training graph's at that position (tests/unit/test_generate.c compares them). A
 * graph the plan cannot run so (decode.h names the layer; gen_cached says which way a
 * generator runs) recomputes the window with model_forward for each token instead, its ids
 * at positions 0.. and id 0 past them (a causal model's logits at the last id do not read
 * those): the same tokens, a window's forward per token.
 *
 * A window never holds more than T positions: once prompt and answer fill it, the next
 * token is computed from the last T tokens (the newest included) re-fed from position 0,
 * which is exactly nanoGPT's generate (idx[:, -block_size:] each step), so the tokens are
 * the same as recomputing the window; only then does a token cost a window.
 *
 * The generator uses the model's activations: nothing else may run the model while it
 * generates (between gen_run calls the model may train: each run starts a window).
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

#include "model.h"
#include "rng.h"

#define GEN_MAX_TOKENS 1024       /* max_tokens of one request */
#define GEN_MAX_TOP_K 1048576     /* GPT_MAX_VOCAB */
#define GEN_MAX_TEMPERATURE 100.0 /* above it every distribution is flat to float precision */

typedef struct gen_state gen_state_t;

/* A generator over the language-model graph m (gen_graph_check; m must outlive it, and its
 * activations are the generator's while it lives). 0, or -1 with err. */
int gen_open(model_t *m, gen_state_t **out, char *err, size_t errlen);
/* Whether m is a language model gen_open can run: token ids (an embedding of the input)
 * of T positions in, T positions of logits out. 0, or -1 with err saying what it takes. */
int gen_graph_check(const model_t *m, char *err, size_t errlen);
/* 1 where each position is computed once (the cache), 0 where each token recomputes the
 * window; then *why (if not NULL) names the layer that cannot run by positions, or says
 * the cache was turned off. */
int gen_cached(const gen_state_t *s, const char **why);
/* Turns the cache off (0: every token recomputes the window, as transformers' generate
 * with use_cache=False) or back on where the graph can run by positions; the cache is
 * emptied. */
void gen_use_cache(gen_state_t *s, int on);
void gen_close(gen_state_t *s);
/* Empties the cache: the next token fed is at position 0. */
void gen_reset(gen_state_t *s);
/* Positions in the cache. */
int gen_position(const gen_state_t *s);
/* Runs token at the next position; *logits (vocab floats, the next token's scores) stay
 * valid until the next call. 0, or -1 with err: a token outside the vocabulary, or the
 * window full (T positions). */
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
