/* model/onnx/einsum.c - see einsum.h. An Einsum becomes the nodes its equation spells, run
 * through the importer's own translation (do_node), so that views of the batch axis,
 * weights and refusals are MatMul's and Transpose's: a batched matrix product of two inputs
 * (P i k, P k j -> P i j: a MatMul; P i k, P j k -> P i j: a Transpose of the second's last
 * two axes, then a MatMul), or one input permuted (a Transpose). Sums over a label, a
 * diagonal (a label twice in one term), broadcasting and the ellipsis are refused by name. */
#include "einsum.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most labels of one term: a tensor's axes, the batch's included. */
#define EIN_LABELS VIEW_AXES
/* Longest equation read (torch writes one label and a space per axis). */
#define EIN_TEXT 256

typedef struct {
    int n;
    char l[EIN_LABELS];
} ein_term_t;

static int is_letter(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* The equation s (len bytes) as its input terms (at most 2: *nin) and its output: NULL, or
 * why it cannot be read. */
static const char *parse_equation(const uint8_t *s, size_t len, ein_term_t in[2], int *nin, ein_term_t *out)
{
    if (len > EIN_TEXT) return "longer than 256 characters";
    int arrow = 0, cur = 0;
    ein_term_t *t = &in[0];
    memset(in, 0, 2 * sizeof *in);
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < len; i++) {
        const uint8_t c = s[i];
        if (c == ' ') continue;
        if (c == '.') return "an ellipsis ('...')";
        if (c == '-' && i + 1 < len && s[i + 1] == '>' && !arrow) {
            arrow = 1, i++, t = out;
            continue;
        }
        if (c == ',' && !arrow) {
            if (++cur > 1) return "more than two inputs";
            t = &in[cur];
            continue;
        }
        if (!is_letter(c)) return "a character other than letters, ',', one '->' and spaces";
        if (t->n == EIN_LABELS) return "more labels in a term than a tensor has axes";
        if (memchr(t->l, c, (size_t)t->n)) return "a label twice in one term (a diagonal)";
        t->l[t->n++] = (char)c;
    }
    if (!arrow) return "no '->' (the implicit output)";
    *nin = cur + 1;
    return NULL;
}

/* Index of label c in term t, or -1. */
static int label_at(const ein_term_t *t, char c)
{
    const char *p = memchr(t->l, c, (size_t)t->n);
    return p ? (int)(p - t->l) : -1;
}

/* A node of op over inputs in (nin) into output, under n's name, with the attribute perm
 * (rank values) when given, through translate. */
static int run_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, char *op, char **in, size_t nin,
                    char *output, int64_t *perm, int rank, view_translate_fn translate)
{
    static char perm_name[] = "perm";
    Onnx__NodeProto m;
    Onnx__AttributeProto a, *ap = &a;
    onnx__node_proto__init(&m);
    m.name = n->name;
    m.op_type = op;
    m.input = in;
    m.n_input = nin;
    m.output = &output;
    m.n_output = 1;
    if (perm) {
        onnx__attribute_proto__init(&a);
        a.name = perm_name;
        a.has_type = 1;
        a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a.ints = perm;
        a.n_ints = (size_t)rank;
        m.attribute = &ap;
        m.n_attribute = 1;
    }
    return translate(im, b, &m);
}

/* The second input's last two axes swapped (rank axes) into a value of a name of its own,
 * *name (owned by the value once it is defined). */
static int transpose_last(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int rank, char **name,
                          view_translate_fn translate)
{
    static char op[] = "Transpose";
    const size_t len = strlen(n->output[0]) + sizeof "/einsum_transposed";
    char *own = malloc(len);
    if (!own) return imp_fail(im, "out of memory");
    snprintf(own, len, "%s/einsum_transposed", n->output[0]);
    if (imp_find_value(im, own)) {
        free(own);
        return imp_fail(im, "node '%s' (Einsum): no room for a value named '%.64s/einsum_transposed'", imp_node_name(n),
                        n->output[0]);
    }
    int64_t perm[EIN_LABELS];
    for (int d = 0; d < rank; d++) perm[d] = d;
    perm[rank - 2] = rank - 1, perm[rank - 1] = rank - 2;
    const int rc = run_node(im, b, n, op, &n->input[1], 1, own, perm, rank, translate);
    for (size_t i = im->nvals; i-- > 0;)
        if (im->vals[i].name == own && !im->vals[i].owned_name) {
            im->vals[i].owned_name = own;
            *name = own;
            return rc;
        }
    free(own);
    return rc ? rc : imp_fail(im, "node '%s' (Einsum): its transposed operand was not defined", imp_node_name(n));
}

int do_einsum(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, view_translate_fn translate)
{
    static const char *const known[] = {"equation", NULL};
    static char matmul[] = "MatMul", transpose[] = "Transpose";
    if (imp_check_attrs(im, n, known)) return -1;
    const Onnx__AttributeProto *eq = imp_attr(n, "equation");
    if (!eq || !eq->has_s) return imp_fail(im, "node '%s' (Einsum): no equation", imp_node_name(n));
    ein_term_t in[2], out;
    int nin = 0;
    const char *why = parse_equation(eq->s.data, eq->s.len, in, &nin, &out);
    if (why) return imp_fail(im, "node '%s' (Einsum): the equation has %s", imp_node_name(n), why);
    const int shown = (int)(eq->s.len > 80 ? 80 : eq->s.len);
    if ((size_t)nin != n->n_input)
        return imp_fail(im, "node '%s' (Einsum): equation '%.*s' names %d inputs, the node has %zu", imp_node_name(n),
                        shown, (const char *)eq->s.data, nin, n->n_input);
    const int r = out.n;
    if (nin == 1 && in[0].n == r) {
        int64_t perm[EIN_LABELS];
        int d = 0;
        for (; d < r && (perm[d] = label_at(&in[0], out.l[d])) >= 0; d++) {}
        if (d == r) return run_node(im, b, n, transpose, n->input, 1, n->output[0], perm, r, translate);
    }
    /* P i k by P k j (or P j k) into P i j: the leading labels P shared in order */
    int ok = nin == 2 && r >= 2 && in[0].n == r && in[1].n == r;
    for (int d = 0; ok && d < r - 2; d++) ok = in[0].l[d] == out.l[d] && in[1].l[d] == out.l[d];
    const char i = ok ? out.l[r - 2] : 0, j = ok ? out.l[r - 1] : 0, k = ok ? in[0].l[r - 1] : 0;
    ok = ok && in[0].l[r - 2] == i && label_at(&out, k) < 0 && label_at(&in[0], j) < 0;
    const int plain = ok && in[1].l[r - 2] == k && in[1].l[r - 1] == j;
    const int swapped = ok && in[1].l[r - 2] == j && in[1].l[r - 1] == k;
    if (!plain && !swapped)
        return imp_fail(im,
                        "node '%s' (Einsum): equation '%.*s': only a batched matrix product of two inputs (P i k, P k "
                        "j -> P i j, or P j k as the second, the labels P shared in order) or one input permuted is "
                        "supported (no sum over a label, no broadcasting)",
                        imp_node_name(n), shown, (const char *)eq->s.data);
    char *operands[2] = {n->input[0], n->input[1]};
    if (swapped && transpose_last(im, b, n, r, &operands[1], translate)) return -1;
    return run_node(im, b, n, matmul, operands, 2, n->output[0], NULL, 0, translate);
}
