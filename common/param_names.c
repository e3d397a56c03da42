/* common/param_names.c - see param_names.h. */
#include "param_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "errmsg.h"
#include "freeze.h"

/* CATALOG_PARAM_NAME_ROWS: {model, names each followed by '\n', one '0' or '1' per name
 * (a product's weight)}, one row per built-in catalog model (tools/catalog_rows.c). */
#include "catalog_models.h"

static const struct {
    const char *model, *names, *product;
} BUILTIN[] = {CATALOG_PARAM_NAME_ROWS};

void param_names_free(param_names_t *p)
{
    if (!p) return;
    free(p->text);
    free(p->product);
    memset(p, 0, sizeof *p);
}

/* Room for more bytes of text and one more name: 0, or -1 out of memory. */
static int grow(param_names_t *p, size_t more)
{
    if (p->len + more + 1 > p->cap_text) {
        size_t cap = p->cap_text ? p->cap_text * 2 : 1024;
        while (cap < p->len + more + 1) cap *= 2;
        char *t = realloc(p->text, cap);
        if (!t) return -1;
        p->text = t;
        p->cap_text = cap;
    }
    if (p->n + 1 > p->cap_n) {
        size_t cap = p->cap_n ? p->cap_n * 2 : 64;
        unsigned char *f = realloc(p->product, cap);
        if (!f) return -1;
        p->product = f;
        p->cap_n = cap;
    }
    return 0;
}

/* Why name cannot be a recorded name, or NULL. */
static const char *name_refused(const char *name)
{
    const size_t len = strlen(name);
    if (len == 0 || len >= PARAM_NAME_MAX) return "must be 1 to 127 bytes";
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        if (*c < 0x20 || *c > 0x7e) return "must be printable ASCII";
    return NULL;
}

int param_names_add(param_names_t *p, const char *name, int product)
{
    const size_t len = strlen(name);
    if (name_refused(name) || p->n >= PARAM_NAMES_MAX || p->len + len + 1 > PARAM_NAMES_BYTES) return -1;
    if (grow(p, len + 1) != 0) return -1;
    memcpy(p->text + p->len, name, len);
    p->len += len;
    p->text[p->len++] = '\n';
    p->text[p->len] = '\0';
    p->product[p->n++] = product ? 1 : 0;
    return 0;
}

/* The next name of p from *at into name (PARAM_NAME_MAX bytes): 1, or 0 past the last. */
static int next_name(const param_names_t *p, size_t *at, char *name)
{
    if (!p->text || *at >= p->len) return 0;
    const char *s = p->text + *at, *nl = memchr(s, '\n', p->len - *at);
    size_t len = nl ? (size_t)(nl - s) : p->len - *at;
    if (len >= PARAM_NAME_MAX) len = PARAM_NAME_MAX - 1; /* param_names_add's bound: not reached */
    memcpy(name, s, len);
    name[len] = '\0';
    *at += len + 1;
    return 1;
}

json_t *param_names_json(const param_names_t *p)
{
    json_t *names = json_array(), *products = json_array();
    char name[PARAM_NAME_MAX];
    size_t at = 0;
    int bad = !names || !products;
    for (size_t i = 0; !bad && next_name(p, &at, name); i++) {
        bad = json_array_append_new(names, json_string(name)) != 0;
        if (!bad && p->product[i]) bad = json_array_append_new(products, json_integer((json_int_t)i)) != 0;
    }
    json_t *j = bad ? NULL : json_pack("{s:o, s:o}", "parameter_names", names, "product_weights", products);
    if (!j) {
        json_decref(names);
        json_decref(products);
    }
    return j;
}

int param_names_from_json(const json_t *j, param_names_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_t *names = json_object_get(j, "parameter_names"), *products = json_object_get(j, "product_weights");
    if (!names || json_is_null(names)) return 0;
    if (!json_is_array(names)) return errmsg(err, errlen, "parameter_names: must be an array of names, or null");
    const size_t n = json_array_size(names);
    if (n > PARAM_NAMES_MAX) return errmsg(err, errlen, "parameter_names: %zu names, at most %d", n, PARAM_NAMES_MAX);
    if (!json_is_array(products) || json_array_size(products) > n)
        return errmsg(err, errlen, "product_weights: must be an array of at most %zu indices into parameter_names", n);
    size_t k = 0; /* the next of products */
    for (size_t i = 0; i < n; i++) {
        const char *name = json_string_value(json_array_get(names, i));
        const char *why = name ? name_refused(name) : "must be a string";
        if (!why && out->len + strlen(name) + 1 > PARAM_NAMES_BYTES) why = "passes the names' bound of 256 KiB";
        json_t *x = json_array_get(products, k);
        const int product = json_is_integer(x) && json_integer_value(x) == (json_int_t)i;
        if (why || param_names_add(out, name, product) != 0) {
            param_names_free(out);
            return errmsg(err, errlen, "parameter_names[%zu]: %s", i, why ? why : "out of memory");
        }
        k += (size_t)product;
    }
    if (k != json_array_size(products)) {
        param_names_free(out);
        return errmsg(err, errlen,
                      "product_weights[%zu]: must be an index into parameter_names, each greater than the one before",
                      k);
    }
    return 1;
}

/* ---- the built-ins ------------------------------------------------------------------------- */

/* "transformer.h.<i>.<part>" into p. */
static int block_add(param_names_t *p, int i, const char *part, int product)
{
    char name[PARAM_NAME_MAX];
    snprintf(name, sizeof name, "transformer.h.%d.%s", i, part);
    return param_names_add(p, name, product);
}

/* A linear layer's weight (a product's) and, with biases, its bias. */
static int linear_add(param_names_t *p, int i, const char *part, int bias)
{
    char w[64], b[64];
    snprintf(w, sizeof w, "%s.weight", part);
    snprintf(b, sizeof b, "%s.bias", part);
    return block_add(p, i, w, 1) || (bias && block_add(p, i, b, 0));
}

/* model/gpt.c's names, in its order: the embeddings, each block, the last layer norm, and
 * the head unless it is the token embedding's table (tied: no product of its own). */
static int gpt_names(const job_spec_t *s, param_names_t *p)
{
    const int bias = s->gpt.bias;
    if (param_names_add(p, "transformer.wte.weight", 0) || param_names_add(p, "transformer.wpe.weight", 0)) return -1;
    for (int i = 0; i < s->gpt.layers; i++)
        if (block_add(p, i, "ln_1.weight", 0) || block_add(p, i, "ln_1.bias", 0) ||
            linear_add(p, i, "attn.c_attn", bias) || linear_add(p, i, "attn.c_proj", bias) ||
            block_add(p, i, "ln_2.weight", 0) || block_add(p, i, "ln_2.bias", 0) ||
            linear_add(p, i, "mlp.c_fc", bias) || linear_add(p, i, "mlp.c_proj", bias))
            return -1;
    if (param_names_add(p, "transformer.ln_f.weight", 0) || param_names_add(p, "transformer.ln_f.bias", 0)) return -1;
    return s->gpt.tie_embeddings ? 0 : param_names_add(p, "lm_head.weight", 1);
}

int param_names_builtin(const job_spec_t *s, param_names_t *out)
{
    memset(out, 0, sizeof *out);
    if (spec_model_is_gpt(s)) {
        if (gpt_names(s, out) == 0) return 1;
        param_names_free(out);
        return -1;
    }
    catalog_model_t m;
    if (s->model_onnx[0] || catalog_model_get(s->model, &m) != 0 || m.source != CATALOG_BUILTIN) return 0;
    for (size_t r = 0; r < sizeof BUILTIN / sizeof BUILTIN[0]; r++) {
        if (strcmp(BUILTIN[r].model, s->model) != 0) continue;
        const char *at = BUILTIN[r].names;
        for (size_t i = 0; BUILTIN[r].product[i]; i++) {
            const char *nl = strchr(at, '\n');
            char name[PARAM_NAME_MAX];
            snprintf(name, sizeof name, "%.*s", (int)(nl - at), at);
            if (param_names_add(out, name, BUILTIN[r].product[i] == '1') != 0) {
                param_names_free(out);
                return -1;
            }
            at = nl + 1;
        }
        return 1;
    }
    return 0; /* a built-in row without names: the worker checks */
}

/* ---- the check ----------------------------------------------------------------------------- */

/* LoRA's name of the adapter beside product weight w (model/lora.c's adapter_name): 0, or
 * -1 when it does not fit (the worker refuses such a target). */
static int adapter_name(const char *w, char which, char *out, size_t len)
{
    size_t n = strlen(w);
    if (n > 7 && strcmp(w + n - 7, ".weight") == 0) n -= 7;
    const int k = snprintf(out, len, "%.*s.lora_%c.weight", (int)n, w, which);
    return k > 0 && (size_t)k < len ? 0 : -1;
}

/* Whether glob g matches a name of p: a product's weight only when products; with targets
 * (lora.targets) also the adapters they add. */
static int any_match(const param_names_t *p, const char *g, int products, const char *targets)
{
    char name[PARAM_NAME_MAX], ad[PARAM_NAME_MAX];
    size_t at = 0;
    for (size_t i = 0; next_name(p, &at, name); i++) {
        if ((!products || p->product[i]) && freeze_matches(g, name)) return 1;
        if (!targets || !targets[0] || !p->product[i] || !freeze_matches(targets, name)) continue;
        if ((adapter_name(name, 'A', ad, sizeof ad) == 0 && freeze_matches(g, ad)) ||
            (adapter_name(name, 'B', ad, sizeof ad) == 0 && freeze_matches(g, ad)))
            return 1;
    }
    return 0;
}

/* Up to 4 of p's names (products' only when products), ", "-separated, into out. */
static void some_names(const param_names_t *p, int products, char *out, size_t len)
{
    char name[PARAM_NAME_MAX];
    size_t at = 0, k = 0;
    int shown = 0;
    out[0] = '\0';
    for (size_t i = 0; shown < 4 && k < len && next_name(p, &at, name); i++) {
        if (products && !p->product[i]) continue;
        const int w = snprintf(out + k, len - k, "%s%s", shown++ ? ", " : "", name);
        if (w > 0) k += (size_t)w;
    }
}

/* Each glob of list (field's) against p: 0, or -1 with err. */
static int check_list(const char *field, const char *list, const param_names_t *p, int products, const char *targets,
                      const char *model, char *err, size_t errlen)
{
    char g[FREEZE_GLOB_MAX];
    size_t at = 0;
    while (freeze_next(list, &at, g)) {
        if (any_match(p, g, products, targets)) continue;
        size_t count = 0;
        for (size_t i = 0; i < p->n; i++) count += !products || p->product[i];
        char some[600];
        some_names(p, products, some, sizeof some);
        const char *what = products ? "matrix product's weight" : "parameter";
        const char *kind = products ? "a fully connected or linear layer's, not shared with another layer; " : "";
        if (!count)
            return errmsg(err, errlen, "%s: \"%s\" matches no %s of model %s (%sit has none)", field, g, what, model,
                          kind);
        return errmsg(err, errlen, "%s: \"%s\" matches no %s of model %s (%s%zu %s%s, e.g. %s%s)", field, g, what,
                      model, kind, count, products ? "such weight" : "parameter", count == 1 ? "" : "s", some,
                      count > 4 ? ", ..." : "");
    }
    return 0;
}

int param_names_check(const job_spec_t *s, const param_names_t *p, const char *model, char *err, size_t errlen)
{
    if (check_list("lora.targets", s->lora.targets, p, 1, NULL, model, err, errlen) != 0) return -1;
    return check_list("freeze", s->freeze, p, 0, s->lora.targets, model, err, errlen);
}
