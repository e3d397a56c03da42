/* model/decode.h - a language model's own graph run by positions: generation's forward.
 *
 * A language-model graph (token ids (T) in, through an embedding; (T, vocabulary) logits
 * out) computes a whole window per call. Generating token by token through it would cost
 * the window per token. decode_rows runs only the new positions p0..p1 of every layer,
 * reading the outputs of the earlier positions where the last calls left them in the
 * activation arena: attention's keys and values there are the cache, the graph's own k and
 * v. That holds for a layer whose output at a position reads its inputs at that position
 * only (the position-wise layers: norms, products with weights, element-wise and view
 * layers that keep the position axis), and for the products that read earlier positions,
 * which the plan names: a (.., M, K) x (.., K, N) product of a query's rows and the keys'
 * columns (its output's columns are positions too: only those up to p1 are computed), the
 * causal softmax of those scores, and the product of its weights and the values' rows
 * (summed over the positions up to p1). Layers that read no id (constants, gathered
 * position tables) are computed whole when a window starts.
 *
 * decode_plan walks the layers once and refuses, naming it, the first layer that cannot
 * run so (a softmax over positions without the causal mask, a reduction along positions,
 * a layer kind it does not take): the caller then recomputes the window per token
 * (model_forward), which gives the same tokens. The logits are those of model_forward
 * within float32 sums taken in other orders (tests/unit/test_generate.c).
 */
#ifndef PACER_DECODE_H
#define PACER_DECODE_H

#include <stddef.h>

#include "model.h"

typedef struct decode_plan decode_plan_t;

/* The plan of m, a language model (generate.h's gen_graph_check): 0 with *out, or -1 with
 * why naming the first layer that cannot run by positions and *out NULL. */
int decode_plan(const model_t *m, decode_plan_t **out, char *why, size_t len);
void decode_plan_free(decode_plan_t *p);
/* The matrix products that read earlier positions (two per attention). */
int decode_cache_products(const decode_plan_t *p);
/* Positions p0..p1 (0 <= p0 < p1 <= T) of the window x (ids as floats, x[0..p1) set)
 * through m, one sample. p0 0 starts a window: the layers that read no id are computed
 * (the weights may have changed since the last window); else positions 0..p0 are those the
 * calls since then computed. At bf16 the caller calls mm_weights_changed (matmul.h) when
 * the weights change. The logits of position p1 - 1
 * are at model_logits(m) + (p1 - 1) * classes; the last layer computes that position
 * alone. Allocates nothing. */
void decode_rows(model_t *m, const decode_plan_t *p, const float *x, int p0, int p1);

#endif
