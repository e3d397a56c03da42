/* common/param_names.h - the parameter names of a job's model as the coordinator knows them
 * without model/ (the layer rule), so that a spec's freeze and lora.targets globs
 * (common/freeze.h) that match nothing are refused at submission, by field and glob,
 * instead of by the worker at its start (worker/init_weights.c, model/lora.c: the same
 * rules, which stay as the last word).
 *
 * One form for every source: the names of every parameter tensor, each followed by '\n'
 * (names are printable ASCII, so none holds one), each marked when it is the weight of a matrix product an adapter may take (model/lora.h's rule: a fully
 * connected or linear layer's weight no other layer reads; what lora.targets may name).
 *   - a catalog built-in (mlp, lenet5, ...): written at build time by tools/catalog_rows.c
 *     from model_create's model into catalog_models.h, so they cannot drift;
 *   - the built-in GPT: its nanoGPT names from model.gpt's layers, bias and
 *     tie_embeddings, written here after model/gpt.c (test_param_names compares them with
 *     model_create_gpt's for every combination of those knobs);
 *   - an uploaded ONNX model: pacer-worker --check-onnx's summary, members
 *     "parameter_names" (the names) and "product_weights" (indices into it), stored by
 *     the coordinator beside the model (coordinator/modelstore.h). A model beyond the
 *     bounds below, or with a name that is not printable ASCII, has "parameter_names":
 *     null: its names are not known here and its globs are checked by the worker only.
 * The worker adds LoRA's adapters before it freezes, so with lora.targets the names freeze
 * is matched against include each targeted product's `<stem>.lora_A.weight` and
 * `.lora_B.weight` (model/lora.c's names, stem: the weight's name less ".weight").
 */
#ifndef PACER_PARAM_NAMES_H
#define PACER_PARAM_NAMES_H

#include <stddef.h>

#include <jansson.h>

#include "spec.h"

#define PARAM_NAMES_MAX 4096           /* names of one model that are recorded */
#define PARAM_NAME_MAX 128             /* bytes of a name with its NUL (model.h's tensor names) */
#define PARAM_NAMES_BYTES (256 * 1024) /* the names' bytes, each with its '\n' */

typedef struct {
    char *text;             /* every parameter's name, each followed by '\n'; malloc'ed */
    unsigned char *product; /* per name: 1 for a product's weight; malloc'ed */
    size_t n, len;          /* names, bytes of text (no NUL counted) */
    size_t cap_text, cap_n; /* allocated */
} param_names_t;

void param_names_free(param_names_t *p);

/* Appends name (a product's weight when product): 0, or -1 when it is not 1 to
 * PARAM_NAME_MAX - 1 printable ASCII bytes, the lists would pass PARAM_NAMES_MAX names or
 * PARAM_NAMES_BYTES bytes, or memory ran out. */
int param_names_add(param_names_t *p, const char *name, int product);

/* The lists as the summary's members: {"parameter_names": [...], "product_weights": [i,
 * ...]} (new reference; NULL when out of memory). */
json_t *param_names_json(const param_names_t *p);
/* The members "parameter_names" and "product_weights" of object j into *out (zeroed first):
 * 1 with the lists, 0 when j has no names (the member absent or null: a model beyond the
 * bounds, or a summary from a worker that did not list them), -1 with err naming the member
 * and what is wrong (not an array, a name or count or size beyond the bounds, an index out
 * of range, repeated, or out of order). */
int param_names_from_json(const json_t *j, param_names_t *out, char *err, size_t errlen);

/* The names of the model of spec s when they are known without the model: the built-in
 * GPT's or a built-in catalog model's. 1 with the lists in *out, 0 when s's model is
 * neither (an imported or uploaded one), -1 out of memory. */
int param_names_builtin(const job_spec_t *s, param_names_t *out);

/* Whether each glob of s's freeze and lora.targets matches a name of p (lora.targets a
 * product's weight; freeze a parameter's or an adapter's the targets add): 0, or -1 with
 * err naming the field, the glob and model, e.g. `freeze: "transformer.h.9.*" matches no
 * parameter of model gpt (it has 2 blocks; some of its 26 names: ...)`. */
int param_names_check(const job_spec_t *s, const param_names_t *p, const char *model, char *err, size_t errlen);

#endif
