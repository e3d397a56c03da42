/* model/onnx/view.c - see view.h. */
#include "view.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errmsg.h"
#include "onnx_import.h"
#include "onnx.pb-c.h"
#include "op_table.h"
#include "sha256.h"
#include "import_internal.h"
#include "fold.h"

/* ---- views: the batch axis moved or merged (value_t's view) ----------------------------- */

/* The view of value x: its own, or its layer's output as it is (x not flattened). */
static void view_get(const model_builder_t *b, const value_t *x, view_t *v)
{
    if (x->viewed) {
        *v = x->view;
        return;
    }
    model_shape_t s;
    model_build_shape_nd(b, x->layer, &s);
    v->np = v->ng = 1 + s.rank;
    for (int d = 0; d < v->np; d++) {
        v->pd[d] = d ? s.dims[d - 1] : 1;
        v->gn[d] = 1;
        v->ax[d] = d;
    }
}

/* Whether views u and v are the same (the entries each uses) */
static int view_same(const view_t *u, const view_t *v)
{
    if (u->np != v->np || u->ng != v->ng) return 0;
    for (int d = 0; d < v->np; d++)
        if (u->pd[d] != v->pd[d] || u->ax[d] != v->ax[d]) return 0;
    for (int g = 0; g < v->ng; g++)
        if (u->gn[g] != v->gn[g]) return 0;
    return 1;
}

/* Whether v reads its layer's output as it is. */
int view_is_plain(const view_t *v)
{
    if (v->ng != v->np) return 0;
    for (int d = 0; d < v->np; d++)
        if (v->ax[d] != d) return 0;
    return 1;
}

/* The graph's shape of v: group products, the batch's group a multiple k N (is_batch). */
static void view_dims(const view_t *v, int64_t *dims)
{
    for (int g = 0, k = 0; g < v->ng; g++) {
        int64_t p = 1;
        int nb = 0;
        for (int e = 0; e < v->gn[g]; e++, k++) {
            nb |= v->ax[k] == 0;
            p *= v->pd[v->ax[k]];
        }
        dims[g] = nb ? batch_times(p) : p;
    }
}

/* "(L, N * 4, 8)" of v into buf; returns buf. */
const char *view_text(const view_t *v, char *buf, size_t len)
{
    int64_t d[VIEW_AXES];
    size_t o = 0;
    view_dims(v, d);
    for (int g = 0; g < v->ng && o < len; g++) {
        const int w = is_batch(d[g])
                          ? (batch_k(d[g]) > 1
                                 ? snprintf(buf + o, len - o, "%sN * %lld", g ? ", " : "(", (long long)batch_k(d[g]))
                                 : snprintf(buf + o, len - o, "%sN", g ? ", " : "("))
                          : snprintf(buf + o, len - o, "%s%lld", g ? ", " : "(", (long long)d[g]);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (o < len) snprintf(buf + o, len - o, ")");
    return buf;
}

/* Defines output `out` of n as layer li read through v (plain: no view). */
static int view_define(imp_t *im, const Onnx__NodeProto *n, size_t out, int li, const view_t *v)
{
    value_t *x = imp_add_value(im, n->output[out], V_LAYER);
    if (!x) return imp_fail(im, "out of memory");
    x->layer = li;
    x->viewed = !view_is_plain(v);
    if (x->viewed) x->view = *v;
    return 0;
}

/* The physical sample shape of v (its axes but the batch). */
static model_shape_t view_sample(const view_t *v)
{
    model_shape_t s = {.rank = v->np - 1};
    for (int d = 1; d < v->np; d++) s.dims[d - 1] = v->pd[d];
    return s;
}

/* view_normal's mark of a physical axis of 1 dropped from the batch's group */
#define DROPPED INT32_MIN

/* Rewrites layer *li and v into the normal form: the physical axes in the graph's order but
 * the batch first (a LAYER_TRANSPOSE), and each group without the batch one physical axis
 * (a LAYER_RESHAPE). Then a group without the batch is one axis in place, the last group is
 * the last physical axis where it has no batch, and v is plain where the batch is the
 * first group alone. */
void view_normal(model_builder_t *b, int *li, view_t *v)
{
    int order[VIEW_AXES], pos[VIEW_AXES], k = 1, moved = 0;
    order[0] = 0;
    for (int e = 0; e < v->np; e++)
        if (v->ax[e] != 0) order[k++] = v->ax[e];
    for (int d = 0; d < v->np; d++) {
        pos[order[d]] = d;
        moved |= order[d] != d;
    }
    if (moved) {
        int perm[MODEL_MAX_RANK];
        for (int d = 1; d < v->np; d++) perm[d - 1] = order[d] - 1;
        *li = model_build_transpose(b, *li, perm);
        int pd[VIEW_AXES] = {0};
        for (int d = 0; d < v->np; d++) pd[d] = v->pd[order[d]];
        memcpy(v->pd, pd, sizeof pd);
        for (int e = 0; e < v->np; e++) v->ax[e] = pos[v->ax[e]];
    }
    /* merge each batch-less group into one axis: they are adjacent now, in order; the axes
     * of 1 in the batch's group are dropped (DROPPED: what a Squeeze left beside it) */
    view_t w = {.np = 1, .pd = {1}, .ng = v->ng};
    int map[VIEW_AXES], merged = 0;
    map[0] = 0;
    for (int g = 0, e = 0; g < v->ng; e += v->gn[g++]) {
        int nb = 0;
        for (int f = 0; f < v->gn[g]; f++) nb |= v->ax[e + f] == 0;
        if (nb) {
            for (int f = 0; f < v->gn[g]; f++) {
                const int a = v->ax[e + f];
                if (a != 0 && v->pd[a] == 1) map[a] = DROPPED, merged = 1;
                else if (a != 0) map[a] = w.np, w.pd[w.np++] = v->pd[a];
            }
            continue;
        }
        int p = 1;
        for (int f = 0; f < v->gn[g]; f++) p *= v->pd[v->ax[e + f]], map[v->ax[e + f]] = -1 - w.np;
        merged |= v->gn[g] > 1;
        w.pd[w.np++] = p;
    }
    if (!merged) return;
    /* the physical axes are numbered in order: rebuild the groups from the merged ones */
    for (int g = 0, e = 0, o = 0; g < v->ng; e += v->gn[g++]) {
        int nb = 0;
        for (int f = 0; f < v->gn[g]; f++) nb |= v->ax[e + f] == 0;
        if (!nb) {
            w.gn[g] = 1;
            w.ax[o++] = -1 - map[v->ax[e]];
            continue;
        }
        w.gn[g] = 0;
        for (int f = 0; f < v->gn[g]; f++)
            if (map[v->ax[e + f]] != DROPPED) w.ax[o++] = map[v->ax[e + f]], w.gn[g]++;
    }
    model_shape_t to = view_sample(&w);
    *li = model_build_reshape(b, *li, &to);
    *v = w;
}

/* Makes value x (V_LAYER, viewed) plain for a node that reads its input as it is: normal
 * form, which must leave the batch the first axis alone. */
static int view_plain(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, value_t *x)
{
    view_t v = x->view;
    int li = x->layer;
    char t[96];
    view_normal(b, &li, &v);
    if (!view_is_plain(&v))
        return imp_fail(
            im,
            "node '%s' (%s): input '%s' is %s, its batch axis moved or merged by a Transpose, Reshape or Concat; "
            "only Transpose, Reshape, Squeeze, Unsqueeze, Shape, MatMul, Gemm, Softmax, Slice, Split, Gather, "
            "Concat, ReduceMean, ReduceSum and elementwise operators read such a tensor",
            imp_node_name(n), n->op_type, x->name, view_text(&x->view, t, sizeof t));
    x->layer = li;
    x->viewed = 0;
    return 0;
}

/* Whether the last group of v is one physical axis, the last, not the batch: what an
 * operator along the last axis (MatMul by a weight, Softmax, a bias) reads in place. */
static int view_last_ok(const view_t *v) { return v->gn[v->ng - 1] == 1 && v->ax[v->np - 1] == v->np - 1 && v->np > 1; }

/* v with its two graph axes swapped (a 2-D view transposed) */
static view_t view_swap2(const view_t *v)
{
    view_t w = *v;
    w.gn[0] = v->gn[1];
    w.gn[1] = v->gn[0];
    for (int f = 0; f < v->gn[1]; f++) w.ax[f] = v->ax[v->gn[0] + f];
    for (int f = 0; f < v->gn[0]; f++) w.ax[v->gn[1] + f] = v->ax[f];
    return w;
}

/* x's view with its last axis in place (view_normal where needed), its layer in *li; with
 * swap2, a 2-D view's axes swapped first (Gemm's transA). */
static int view_last(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, int swap2, int *li,
                     view_t *v)
{
    char t[96];
    view_get(b, x, v);
    if (swap2 && v->ng == 2) *v = view_swap2(v);
    *li = x->layer;
    if (!view_last_ok(v)) view_normal(b, li, v);
    if (!view_last_ok(v))
        return imp_fail(im, "node '%s' (%s): input '%s' is %s: its last axis holds the batch", imp_node_name(n),
                        n->op_type, x->name, view_text(&x->view, t, sizeof t));
    return 0;
}

/* Transpose of a view, or one that moves the batch axis: the groups reordered, no layer. */
static int view_transpose(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    view_t v, w;
    view_get(b, x, &v);
    const Onnx__AttributeProto *a = imp_attr(n, "perm");
    int first[VIEW_AXES], seen = 0;
    for (int g = 0, e = 0; g < v.ng; e += v.gn[g++]) first[g] = e;
    if (!a || (int)a->n_ints != v.ng)
        return imp_fail(im, "node '%s' (Transpose): perm must name the %d axes", imp_node_name(n), v.ng);
    w = v;
    for (int g = 0, o = 0; g < v.ng; g++) {
        const int64_t p = a->ints[g];
        if (p < 0 || p >= v.ng || (seen >> p & 1))
            return imp_fail(im, "node '%s' (Transpose): perm is not a permutation", imp_node_name(n));
        seen |= 1 << p;
        w.gn[g] = v.gn[p];
        for (int f = 0; f < v.gn[p]; f++) w.ax[o++] = v.ax[first[p] + f];
    }
    return view_define(im, n, 0, x->layer, &w);
}

/* Reshape of a view, or one whose shape holds the batch elsewhere than first alone (a
 * multiple k N, or not first): the graph's axes regrouped along the physical ones in their
 * order, a physical axis cut where a new axis ends inside it (a LAYER_RESHAPE of the
 * layer). sh: the shape (0 copies an axis, one -1 takes what is left). */
static int view_reshape(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, const int64_t *sh,
                        int nsh)
{
    view_t v;
    char t[96];
    view_get(b, x, &v);
    int64_t cur[VIEW_AXES], tk[VIEW_AXES];
    int tn[VIEW_AXES], infer = -1;
    int64_t rest = 1, known = 1; /* the physical elements but the batch; the known target's */
    int known_n = 0;
    view_dims(&v, cur);
    for (int d = 1; d < v.np; d++) rest *= v.pd[d];
    if (nsh < 1 || nsh > VIEW_AXES) goto refuse;
    for (int i = 0; i < nsh; i++) {
        int64_t s = sh[i] == 0 && i < v.ng ? cur[i] : sh[i];
        tn[i] = is_batch(s);
        tk[i] = tn[i] ? batch_k(s) : s;
        if (s == -1 && infer < 0) {
            infer = i;
            continue;
        }
        if (tk[i] < 1 || tk[i] > DIM_MAX || (tn[i] && known_n) || model_dim_mul(known, tk[i], &known) != 0) goto refuse;
        known_n |= tn[i];
        if (known > rest) goto refuse;
    }
    if (infer >= 0) {
        if (rest % known) goto refuse;
        tk[infer] = rest / known;
        tn[infer] = !known_n;
    } else if (known != rest || !known_n) goto refuse;
    /* the walk: the physical axes in the graph's order, cut into pieces, each target axis
     * the pieces whose product it is */
    int pieces[VIEW_AXES][VIEW_AXES], np[VIEW_AXES] = {0}, gp[VIEW_AXES * 2][2], ngp = 0, gn[VIEW_AXES];
    int e = 0;
    int64_t left = v.pd[v.ax[0]]; /* what is left of the current physical axis */
    for (int i = 0; i < nsh; i++) {
        int64_t acc = 1;
        int accn = 0;
        gn[i] = 0;
        if (tk[i] == 1 && !tn[i]) {
            /* a new axis of 1: a piece of 1 cut in front of what is left (or after the last);
             * never of the batch's physical axis, whose pieces would make the first the
             * batch: then after the axis before it (walked to its end), or in front of the
             * one after (not walked yet) */
            const int at = e < v.np ? e : v.np - 1;
            int p = v.ax[at];
            if (p == 0) p = at > 0 ? v.ax[at - 1] : at + 1 < v.np ? v.ax[at + 1] : 0;
            if (p == 0) goto refuse;
            if (np[p] >= VIEW_AXES) goto refuse;
            pieces[p][np[p]] = 1;
            gp[ngp][0] = p, gp[ngp][1] = np[p]++, ngp++, gn[i] = 1;
            continue;
        }
        while (acc != tk[i] || accn != tn[i]) {
            if (e >= v.np || ngp >= 2 * VIEW_AXES) goto refuse;
            const int p = v.ax[e];
            int64_t take;
            if (p == 0) {
                if (!tn[i] || accn) goto refuse;
                accn = 1, take = 1;
            } else {
                if (tk[i] % acc) goto refuse;
                const int64_t need = tk[i] / acc;
                if (left <= need && need % left == 0) take = left;
                else if (need > 1 && left % need == 0) take = need;
                else goto refuse;
                acc *= take;
            }
            if (np[p] >= VIEW_AXES) goto refuse;
            pieces[p][np[p]] = (int)take;
            gp[ngp][0] = p, gp[ngp][1] = np[p]++, ngp++, gn[i]++;
            left = p == 0 ? 1 : left / take;
            if (left == 1 && ++e < v.np) left = v.pd[v.ax[e]];
        }
    }
    /* axes of 1 left over join the last group */
    for (; e < v.np; e++) {
        const int p = v.ax[e];
        if (v.pd[p] != 1 || np[p] || np[p] >= VIEW_AXES) goto refuse;
        pieces[p][np[p]] = 1;
        gp[ngp][0] = p, gp[ngp][1] = np[p]++, ngp++, gn[nsh - 1]++;
    }
    /* the new physical axes: each old one's pieces in order */
    view_t w = {.ng = nsh};
    int base[VIEW_AXES], cut = 0;
    w.np = 0;
    for (int p = 0; p < v.np; p++) {
        base[p] = w.np;
        if (w.np + np[p] > VIEW_AXES) goto refuse;
        cut |= np[p] != 1;
        for (int k = 0; k < np[p]; k++) w.pd[w.np++] = p == 0 ? 1 : pieces[p][k];
    }
    for (int i = 0, o = 0; i < nsh; i++) {
        w.gn[i] = gn[i];
        for (int f = 0; f < gn[i]; f++, o++) w.ax[o] = base[gp[o][0]] + gp[o][1];
    }
    int li = x->layer;
    if (cut) {
        model_shape_t to = view_sample(&w);
        li = model_build_reshape(b, li, &to);
    }
    return view_define(im, n, 0, li, &w);
refuse:
    if (im->batch_dim > 0 && !known_n)
        /* torch folded the batch of the example input into the shape: (L, N * heads, d)
         * and (L * N, E) both became constants without N, so where N goes is lost */
        return imp_fail(im,
                        "node '%s' (%s): %s to a constant shape of %d axes without the batch: the file fixes the "
                        "batch to %d, so the shape no longer says which axis holds it; export with a dynamic batch "
                        "(torch.onnx.export(..., dynamic_axes={'%.64s': {0: 'N'}}))",
                        imp_node_name(n), n->op_type, view_text(&v, t, sizeof t), nsh, im->batch_dim,
                        im->input ? im->input : "input");
    return imp_fail(im, "node '%s' (%s): %s cannot be read as the shape given (its axes regrouped in order)",
                    imp_node_name(n), n->op_type, view_text(&v, t, sizeof t));
}

/* Runs n's own translation (translate) on the physical layers of its viewed inputs (all of view v, layer li
 * for x), then gives every activation it defined the view v with its layer's sizes: for the
 * operators that work on the physical axes as they are (elementwise ones, and those along
 * the last axis once view_last put it in place). */
static int view_through(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const view_t *v,
                        view_translate_fn translate)
{
    size_t hidden[8], nh = 0, first = im->nvals;
    for (size_t i = 0; i < n->n_input && nh < 8; i++) {
        value_t *x = n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
        if (x && x->kind == V_LAYER && x->viewed) x->viewed = 0, hidden[nh++] = (size_t)(x - im->vals);
    }
    int rc = translate(im, b, n);
    for (size_t k = 0; k < nh; k++) im->vals[hidden[k]].viewed = 1;
    for (size_t k = first; rc == 0 && k < im->nvals; k++) {
        value_t *o = &im->vals[k];
        model_shape_t s;
        if (o->kind != V_LAYER) continue;
        model_build_shape_nd(b, o->layer, &s);
        if (s.rank != v->np - 1 || o->flat)
            return imp_fail(im, "node '%s' (%s): its output does not keep the axes of its input's view",
                            imp_node_name(n), n->op_type);
        o->viewed = 1;
        o->view = *v;
        for (int d = 1; d < v->np; d++) o->view.pd[d] = s.dims[d - 1];
    }
    return rc;
}

/* The physical axis a Slice or Split of v cuts along graph axis g: the group's one axis
 * when it is not the batch, or in the batch's group its outermost axis when that is not the
 * batch (a Concat along the batch's, view_concat_batch), *unit then the multiple k of N
 * each of its elements holds (0 otherwise); 0 for any other axis. */
static int cut_axis(const view_t *v, int64_t g, int64_t *unit)
{
    int first = 0, nb = 0;
    *unit = 0;
    if (g < 0 || g >= v->ng) return 0;
    for (int h = 0; h < g; h++) first += v->gn[h];
    if (v->gn[g] == 1) return v->ax[first];
    int64_t k = 1;
    for (int f = 1; f < v->gn[g]; f++) {
        const int a = v->ax[first + f];
        nb |= a == 0;
        k *= a ? v->pd[a] : 1;
    }
    if (!nb || v->ax[first] == 0) return 0;
    *unit = k;
    return v->ax[first];
}

/* Bound s of a cut in the batch's group as an index of its outer axis (dim elements of
 * unit N each, cut_axis): 0, a multiple of unit N (sym: s may be one, a value computed
 * from the batch; a constant in the file is never the batch), or a constant past any
 * size (torch's INT64_MAX for "to the end"); -1 for any other, which depends on N. */
static int64_t batch_bound(int64_t s, int64_t unit, int dim, int sym)
{
    int64_t k, c;
    if (s == 0) return 0;
    if (!is_symbolic(s) || !sym) return s >= MODEL_DIM_ARITH_MAX ? dim : -1;
    sym_parts(s, &k, &c);
    if (c != 0 || k % unit != 0) return -1;
    return k / unit < dim ? k / unit : dim;
}

/* Whether input i of n is a value computed at import (V_INTS), which may hold the batch */
static int input_computed(imp_t *im, const Onnx__NodeProto *n, size_t i)
{
    const value_t *x = i < n->n_input && n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
    return x && x->kind == V_INTS;
}

/* Slice of a view: each axis sliced one physical axis without the batch, or the batch's
 * group at multiples of it (cut_axis). */
static int view_slice(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    static const char *const none[] = {NULL};
    int64_t s[4][INTS_MAX];
    int cnt[4] = {0, 0, 0, 0}, sc;
    view_t v;
    char t[96];
    view_get(b, x, &v);
    int li = x->layer;
    if (imp_check_attrs(im, n, none)) return -1;
    for (int i = 0; i < 4; i++)
        if ((size_t)i + 1 < n->n_input && n->input[i + 1][0] &&
            (i < 2 ? imp_input_sym : imp_input_ints)(im, n, (size_t)i + 1, s[i], &cnt[i], &sc) != 0)
            return imp_fail(im, "node '%s' (Slice): starts, ends, axes and steps must be constants", imp_node_name(n));
    if (cnt[0] < 1 || cnt[1] != cnt[0] || (cnt[2] && cnt[2] != cnt[0]) || (cnt[3] && cnt[3] != cnt[0]))
        return imp_fail(im, "node '%s' (Slice): starts, ends, axes and steps of one length are required",
                        imp_node_name(n));
    for (int k = 0; k < cnt[0]; k++) {
        const int64_t ax = cnt[2] ? (s[2][k] < 0 ? s[2][k] + v.ng : s[2][k]) : k, step = cnt[3] ? s[3][k] : 1;
        int64_t unit, st, en;
        const int p = cut_axis(&v, ax, &unit);
        if (p == 0 || step == 0 || step > DIM_MAX || step < -DIM_MAX || (unit && step != 1))
            return imp_fail(im,
                            "node '%s' (Slice): axis %lld of %s: only an axis without the batch, a step not 0 (or "
                            "the batch joined to others, cut at multiples of it with step 1)",
                            imp_node_name(n), (long long)ax, view_text(&v, t, sizeof t));
        if (unit) {
            st = batch_bound(s[0][k], unit, v.pd[p], input_computed(im, n, 1));
            en = batch_bound(s[1][k], unit, v.pd[p], input_computed(im, n, 2));
            if (st < 0 || en < 0)
                return imp_fail(im,
                                "node '%s' (Slice): axis %lld of %s: bounds at multiples of N * %lld only (the "
                                "batch joined to others, torch.cat(..., 0) cut back apart)",
                                imp_node_name(n), (long long)ax, view_text(&v, t, sizeof t), (long long)unit);
        } else if ((is_symbolic(s[0][k]) && input_computed(im, n, 1)) ||
                   (is_symbolic(s[1][k]) && input_computed(im, n, 2)))
            return imp_fail(im, "node '%s' (Slice): axis %lld of %s: a bound of the batch size on an axis without it",
                            imp_node_name(n), (long long)ax, view_text(&v, t, sizeof t));
        else st = slice_bound_step(s[0][k], v.pd[p], step), en = slice_bound_step(s[1][k], v.pd[p], step);
        if (step > 0 ? st >= en : st <= en)
            return imp_fail(im, "node '%s' (Slice): an empty slice is not supported", imp_node_name(n));
        li = model_build_slice(b, li, p - 1, (int)st, (int)en, (int)step);
        model_shape_t o;
        model_build_shape_nd(b, li, &o);
        v.pd[p] = o.dims[p - 1];
    }
    return view_define(im, n, 0, li, &v);
}

/* v without its group g, which is one physical axis of 1 other than the batch's (what a
 * Gather of a scalar index or a reduction without keepdims leaves) */
static view_t view_drop(const view_t *v, int g)
{
    int first = 0;
    for (int h = 0; h < g; h++) first += v->gn[h];
    const int p = v->ax[first];
    view_t w = {.np = v->np - 1, .ng = v->ng - 1};
    for (int d = 0; d < v->np; d++)
        if (d != p) w.pd[d - (d > p)] = v->pd[d];
    for (int h = 0, o = 0, e = 0; h < v->ng; e += v->gn[h++]) {
        if (h == g) continue;
        w.gn[h - (h > g)] = v->gn[h];
        for (int f = 0; f < v->gn[h]; f++) {
            const int a = v->ax[e + f];
            w.ax[o++] = a - (a > p);
        }
    }
    return w;
}

/* Gather of a view by one constant index along a graph axis that is one physical axis
 * without the batch (Swin's q, k, v = qkv[0], qkv[1], qkv[2] after qkv.permute(2, 0, 3, 1,
 * 4)): a LAYER_SLICE of that element, and for a scalar index a LAYER_RESHAPE without the
 * axis, the view then without its group. */
static int view_gather(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    static const char *const known[] = {"axis", NULL};
    int64_t idx[INTS_MAX];
    int ni, scalar, first[VIEW_AXES];
    view_t v;
    char t[96];
    view_get(b, x, &v);
    for (int g = 0, e = 0; g < v.ng; e += v.gn[g++]) first[g] = e;
    if (imp_check_attrs(im, n, known)) return -1;
    if (n->n_input != 2 || imp_input_ints(im, n, 1, idx, &ni, &scalar) || ni != 1)
        return imp_fail(im, "node '%s' (Gather): the indices of an activation must be one constant integer",
                        imp_node_name(n));
    const int64_t given = imp_attr_int(n, "axis", 0), g = given < 0 ? given + v.ng : given;
    const int p = g >= 0 && g < v.ng && v.gn[g] == 1 ? v.ax[first[g]] : 0;
    if (p == 0)
        return imp_fail(im, "node '%s' (Gather): axis %lld of %s: only an axis without the batch", imp_node_name(n),
                        (long long)given, view_text(&v, t, sizeof t));
    const int64_t k = idx[0] < 0 ? idx[0] + v.pd[p] : idx[0];
    if (k < 0 || k >= v.pd[p])
        return imp_fail(im, "node '%s' (Gather): index %lld is out of range for an axis of %d", imp_node_name(n),
                        (long long)idx[0], v.pd[p]);
    int li = model_build_slice(b, x->layer, p - 1, (int)k, (int)k + 1, 1);
    v.pd[p] = 1;
    if (!scalar) return view_define(im, n, 0, li, &v);
    view_t w = view_drop(&v, (int)g);
    model_shape_t to = view_sample(&w);
    return view_define(im, n, 0, model_build_reshape(b, li, &to), &w);
}

/* Split of a view along a graph axis that is one physical axis without the batch (timm's
 * q, k, v = qkv.unbind(0) after qkv.permute(2, 0, 3, 1, 4), which torch writes as a Split
 * on axis 0 and a Squeeze of each part): a LAYER_SLICE per output, each the view with that
 * axis's size its part. Sizes as do_split takes them: the attribute (before opset 13), the
 * constant input, or equal parts. */
static int view_split(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    static const char *const known[] = {"axis", "split", NULL};
    int64_t sz[INTS_MAX];
    int ns = 0, sc;
    int64_t unit;
    view_t v;
    char t[96];
    view_get(b, x, &v);
    if (imp_check_attrs(im, n, known)) return -1;
    const int64_t given = imp_attr_int(n, "axis", 0);
    const int p = cut_axis(&v, given < 0 ? given + v.ng : given, &unit);
    if (p == 0 || n->n_output < 1 || n->n_output > INTS_MAX)
        return imp_fail(im,
                        "node '%s' (Split): axis %lld of %s: only an axis without the batch, or one that joins the "
                        "batch to others, into 1 to %d outputs",
                        imp_node_name(n), (long long)given, view_text(&v, t, sizeof t), INTS_MAX);
    const int dim = v.pd[p];
    const Onnx__AttributeProto *a = imp_attr(n, "split");
    if (a && a->n_ints <= INTS_MAX)
        for (size_t i = 0; i < a->n_ints; i++) sz[ns++] = a->ints[i];
    else if (n->n_input > 1 && n->input[1][0] && imp_input_sym(im, n, 1, sz, &ns, &sc) != 0)
        return imp_fail(im, "node '%s' (Split): split must be a constant", imp_node_name(n));
    /* in the batch's group: sizes of multiples of unit N, each as its count of outer elements */
    for (int i = 0; unit && i < ns; i++) {
        const int64_t e = batch_bound(sz[i], unit, INT32_MAX, !a && input_computed(im, n, 1));
        if (e < 1 || e == INT32_MAX)
            return imp_fail(im,
                            "node '%s' (Split): axis %lld of %s: sizes at multiples of N * %lld only (a constant size "
                            "fixes the batch of the example exported: torch.split(x, n, 0) writes one, "
                            "x.chunk(k, 0) keeps N)",
                            imp_node_name(n), (long long)given, view_text(&v, t, sizeof t), (long long)unit);
        sz[i] = e;
    }
    if (!ns) {
        ns = (int)n->n_output;
        for (int i = 0; i < ns; i++) sz[i] = dim / ns;
    }
    int64_t total = 0; /* each size bounded before any is summed */
    for (int i = 0; i < ns; i++) {
        if (sz[i] < 1 || sz[i] > dim)
            return imp_fail(im, "node '%s' (Split): size %d is %lld, not in [1, %d] (the axis)", imp_node_name(n), i,
                            (long long)sz[i], dim);
        total += sz[i];
    }
    if (ns != (int)n->n_output || total != dim)
        return imp_fail(im, "node '%s' (Split): %d sizes for %zu outputs do not split the axis of %d", imp_node_name(n),
                        ns, n->n_output, dim);
    for (int i = 0, off = 0; i < ns; off += (int)sz[i++]) {
        if (!n->output[i][0]) continue;
        view_t w = v;
        w.pd[p] = (int)sz[i];
        if (view_define(im, n, (size_t)i, model_build_slice(b, x->layer, p - 1, off, off + (int)sz[i], 1), &w))
            return -1;
    }
    return 0;
}

/* The axes node n names, the attribute "axes" (before opset 13) or its constant input 1,
 * into ax (at most INTS_MAX), *na their count: 0, or -1 with the reason. */
static int axes_list(imp_t *im, const Onnx__NodeProto *n, int64_t *ax, int *na)
{
    int sc;
    const Onnx__AttributeProto *a = imp_attr(n, "axes");
    *na = 0;
    if (a && a->n_ints <= INTS_MAX)
        for (size_t i = 0; i < a->n_ints; i++) ax[(*na)++] = a->ints[i];
    else if (a || (n->n_input > 1 && n->input[1][0] && imp_input_ints(im, n, 1, ax, na, &sc) != 0))
        return imp_fail(im, "node '%s' (%s): axes must be a constant of at most %d values", imp_node_name(n),
                        n->op_type, INTS_MAX);
    return 0;
}

/* Squeeze or Unsqueeze of a view: a Reshape of it (view_reshape) to its shape without the
 * axes of 1 named (all of them when none are), or with axes of 1 inserted there. The axes:
 * an attribute before opset 13, a constant input from it. */
static int view_squeeze(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, int unsqueeze)
{
    static const char *const known[] = {"axes", NULL};
    int64_t axes[INTS_MAX], cur[VIEW_AXES], sh[VIEW_AXES];
    int na = 0, nsh = 0;
    unsigned named = 0;
    view_t v;
    char t[96];
    view_get(b, x, &v);
    view_dims(&v, cur);
    if (imp_check_attrs(im, n, known) || axes_list(im, n, axes, &na)) return -1;
    const int out_rank = unsqueeze ? v.ng + na : v.ng;
    for (int i = 0; i < na; i++) {
        const int64_t k = axes[i] < 0 ? axes[i] + out_rank : axes[i];
        if (k < 0 || k >= out_rank || k >= VIEW_AXES || (named >> k & 1))
            return imp_fail(im, "node '%s' (%s): axis %lld of %s: out of range or named twice", imp_node_name(n),
                            n->op_type, (long long)axes[i], view_text(&v, t, sizeof t));
        named |= 1u << k;
    }
    for (int d = 0, g = 0; d < out_rank; d++) {
        const int pick = (named >> d & 1) || (!unsqueeze && !na && cur[g] == 1);
        if (unsqueeze) {
            sh[nsh++] = pick ? 1 : cur[g++];
            continue;
        }
        if (pick && cur[g] != 1)
            return imp_fail(im, "node '%s' (Squeeze): axis %d of %s is not of size 1", imp_node_name(n), d,
                            view_text(&v, t, sizeof t));
        if (!pick) sh[nsh++] = cur[g];
        g++;
    }
    if (nsh < 1 || nsh > VIEW_AXES)
        return imp_fail(im, "node '%s' (%s): %s would have %d axes (1 to %d)", imp_node_name(n), n->op_type,
                        view_text(&v, t, sizeof t), nsh, VIEW_AXES);
    return view_reshape(im, b, n, x, sh, nsh);
}

/* MatMul of two activations, either a view: both in normal form with the batch in their
 * first axis and grouped alike ((N * heads, L, d) times (N * heads, d, L)) */
static int view_bmm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, const value_t *y)
{
    view_t v[2];
    int li[2];
    char t[2][96];
    const value_t *xy[2] = {x, y};
    for (int k = 0; k < 2; k++) {
        view_get(b, xy[k], &v[k]);
        li[k] = xy[k]->layer;
        view_normal(b, &li[k], &v[k]);
    }
    int same = v[0].ng == v[1].ng && v[0].np == v[1].np && v[0].ax[0] == 0 && v[1].ax[0] == 0;
    for (int g = 0; same && g < v[0].ng; g++) same = v[0].gn[g] == v[1].gn[g];
    const int lo = same ? model_build_bmm(b, li[0], li[1]) : -1;
    if (!same || model_build_failed(b))
        return imp_fail(im,
                        "node '%s' (MatMul): %s times %s: two activations multiply as (N, ..., M, K) times (N, ..., K, "
                        "N2) with equal leading axes (no broadcasting)",
                        imp_node_name(n), view_text(&v[0], t[0], sizeof t[0]), view_text(&v[1], t[1], sizeof t[1]));
    model_shape_t o;
    model_build_shape_nd(b, lo, &o);
    for (int d = 1; d < v[0].np; d++) v[0].pd[d] = o.dims[d - 1];
    return view_define(im, n, 0, lo, &v[0]);
}

/* Gemm of a 2-D view ((L * N, E): the out-projection of nn.MultiheadAttention; with transA,
 * A^T of a view (E, N) whose batch torch moved last, y.t() @ W): a LAYER_LINEAR along its
 * last axis, alpha and beta 1 */
static int view_gemm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    static const char *const known[] = {"alpha", "beta", "transA", "transB", NULL};
    view_t v;
    int li, OUT, rc = 1;
    gemm_layout_t layout;
    const char *bias;
    if (imp_check_attrs(im, n, known)) return -1;
    const int64_t ta = imp_attr_int(n, "transA", 0);
    if (view_last(im, b, n, x, ta == 1, &li, &v)) return -1;
    const int IN = v.pd[v.np - 1];
    if (v.ng != 2 || (ta != 0 && ta != 1) || (rc = imp_gemm_linear(im, n, IN, &OUT, &layout, &bias)) == 1)
        return imp_fail(im,
                        "node '%s' (Gemm): of a view of the batch: alpha and beta 1, B an initializer of %d inputs, C "
                        "a vector of the outputs or none",
                        imp_node_name(n), IN);
    if (rc) return -1;
    if (v.np == 2) {
        /* transposed back to the batch first: a sample of one axis, Gemm's own layer */
        const gemm_desc_t g = {.layout = layout, .alpha = 1.0f, .beta = 1.0f};
        li = model_build_gemm(b, li, OUT, &g, n->input[1], bias);
    } else {
        li = model_build_linear_layout(b, li, OUT, layout, n->input[1]);
        if (bias) li = model_build_fc_bias(b, li, bias);
    }
    v.pd[v.np - 1] = OUT;
    return view_define(im, n, 0, li, &v);
}

/* Whether the constant input i of n varies along the last axis at most (a bias, a scale):
 * what a view with its last axis in place broadcasts as its physical layer does. */
static int last_axis_const(imp_t *im, const Onnx__NodeProto *n, size_t i)
{
    const Onnx__TensorProto *t = imp_input_tensor(im, n, i);
    if (!t || imp_tensor_count(t) < 1) return 0;
    for (size_t d = 0; d + 1 < t->n_dims; d++)
        if (t->dims[d] != 1) return 0;
    return 1;
}

/* Layer li, a flattened value's (N, C * H * W), as one axis (a LAYER_RESHAPE) */
static int flat_one_axis(model_builder_t *b, int li)
{
    model_shape_t s, one = {.rank = 1, .dims = {1}};
    model_build_shape_nd(b, li, &s);
    for (int d = 0; d < s.rank; d++) one.dims[0] *= s.dims[d];
    return model_build_reshape(b, li, &one);
}

/* The rank of Concat input i when it is a constant (an initializer, or a constant folded at
 * import: V_ARRAY), its dimensions into dims (at most ARR_DIMS); -1 for an activation. */
int concat_constant_dims(imp_t *im, const Onnx__NodeProto *n, size_t i, int64_t *dims)
{
    const value_t *v = i < n->n_input && n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
    if (!v || v->transposed || (v->kind != V_TENSOR && v->kind != V_ARRAY)) return -1;
    const int rank = v->kind == V_TENSOR ? (int)v->tensor->n_dims : v->arank;
    if (rank > ARR_DIMS) return ARR_DIMS + 1; /* refused by the caller's shape check */
    for (int d = 0; d < rank; d++) dims[d] = v->kind == V_TENSOR ? v->tensor->dims[d] : v->adims[d];
    return rank;
}

/* Input i of a Concat along sample axis ax as a layer: an activation, or a parameter of
 * the activations' shape but along ax with a leading 1 for the batch, expanded to every
 * sample (torch.cat([cls, x], dim=1) exported with the batch fixed to 1: the class token
 * then stands for every sample's) */
int concat_operand(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, size_t i, const model_shape_t *like, int ax,
                   int *li)
{
    int64_t dims[ARR_DIMS];
    const int rank = concat_constant_dims(im, n, i, dims);
    const value_t *y;
    if (rank < 0) {
        if (imp_input_layer(im, n, i, &y)) return -1;
        *li = y->flat ? flat_one_axis(b, y->layer) : y->layer; /* (N, C * H * W) joins as one axis */
        return 0;
    }
    int ok = rank == like->rank + 1 && dims[0] == 1;
    for (int d = 0; ok && d < like->rank; d++)
        ok = d == ax ? dims[d + 1] >= 1 && dims[d + 1] <= DIM_MAX : dims[d + 1] == like->dims[d];
    char s[96];
    if (!ok)
        return imp_fail(im,
                        "node '%s' (Concat): constant input %zu must be (1, ...) of the activations' %s but along axis "
                        "%d: one parameter for every sample",
                        imp_node_name(n), i, imp_batch_text(like, s, sizeof s), ax + 1);
    model_shape_t to = *like;
    to.dims[ax] = (int)dims[ax + 1];
    int lc;
    if (binary_operand(im, b, n, i, like->rank, &lc)) return -1;
    *li = model_build_expand(b, lc, &to);
    return 0;
}

/* Transpose (1, 0) of a flattened value (N, C * H * W), x.flatten(1).t(): its batch moved
 * last, a view of the flat layer (a LAYER_RESHAPE to one axis); any other perm is
 * do_transpose's (1 back). */
static int flat_transpose(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    static const char *const known[] = {"perm", NULL};
    const Onnx__AttributeProto *a = imp_attr(n, "perm");
    if (!a || a->n_ints != 2 || a->ints[0] != 1 || a->ints[1] != 0) return 1;
    if (imp_check_attrs(im, n, known)) return -1;
    value_t y = *x;
    y.layer = flat_one_axis(b, x->layer);
    y.flat = 0;
    return view_transpose(im, b, n, &y);
}

/* Input i of a Concat along the batch as a layer in normal form (view_normal), a flattened
 * value one axis (as flat_transpose reads it); 1 when it is no activation of its own
 * (a constant, a lead or deferred value: do_concat's to refuse). */
static int concat_batch_input(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, size_t i, int *li, view_t *v)
{
    const value_t *x = n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
    if (!x || x->kind != V_LAYER || x->lead || x->defer) return 1;
    value_t y = *x;
    if (x->flat) y.layer = flat_one_axis(b, x->layer), y.flat = 0;
    view_get(b, &y, v);
    *li = y.layer;
    view_normal(b, li, v);
    return 0;
}

/* Concat of activations along an axis that holds the batch (torch.cat([x, y], 0)): a new
 * physical axis of the inputs' count, outermost in the batch's group (the graph's index
 * along it is j k N + the input's own), each input of one shape in normal form unsqueezed
 * there and joined along it (LAYER_CONCAT); a view, which Slice and Split cut back apart
 * at multiples of the batch (torch.chunk). */
static int concat_along_batch(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int64_t given)
{
    view_t v, w;
    int li, first = 0, g = 0;
    char t[2][96];
    if (concat_batch_input(im, b, n, 0, &li, &v)) return -1;
    for (int e = 0; v.ax[e] != 0; e++)
        if (e + 1 == first + v.gn[g]) first += v.gn[g++];
    if (v.np + 1 > VIEW_AXES || v.np > MODEL_MAX_RANK)
        return imp_fail(im, "node '%s' (Concat): along the batch of %s: one axis more than %d", imp_node_name(n),
                        view_text(&v, t[0], sizeof t[0]), MODEL_MAX_RANK);
    model_shape_t one = view_sample(&v);
    memmove(one.dims + 1, one.dims, (size_t)one.rank * sizeof one.dims[0]);
    one.dims[0] = 1;
    one.rank++;
    int out = model_build_reshape(b, li, &one);
    for (size_t i = 1; i < n->n_input; i++) {
        int lj;
        view_t u;
        const int rc = concat_batch_input(im, b, n, i, &lj, &u);
        if (rc || !view_same(&u, &v))
            return imp_fail(im,
                            "node '%s' (Concat): along axis %lld, which holds the batch, input %zu is %s and input 0 "
                            "%s: activations of one shape join there",
                            imp_node_name(n), (long long)given, i,
                            rc ? "no activation" : view_text(&u, t[1], sizeof t[1]), view_text(&v, t[0], sizeof t[0]));
        out = model_build_concat_axis(b, out, model_build_reshape(b, lj, &one), 0);
        if (model_build_failed(b)) /* a list bound: the rest of a file's inputs need no walk */
            return imp_fail(
                im, "node '%s' (Concat): its %zu inputs joined exceed a bound of the model (its size or its layers)",
                imp_node_name(n), n->n_input);
    }
    /* the new physical axis 1: every other one after the batch one further on */
    w = v;
    w.np = v.np + 1;
    w.pd[1] = (int)n->n_input;
    for (int d = 1; d < v.np; d++) w.pd[d + 1] = v.pd[d];
    for (int e = 0, o = 0; e < v.np; e++) {
        if (e == first) w.ax[o++] = 1;
        w.ax[o++] = v.ax[e] ? v.ax[e] + 1 : 0;
    }
    w.gn[g]++;
    return view_define(im, n, 0, out, &w);
}

/* Concat of views along an axis without the batch (torch.stack(xs) read back along its
 * new axis): in normal form that axis is one physical axis, along which the inputs, equal
 * but there, join (LAYER_CONCAT). */
static int concat_along_axis(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int64_t given)
{
    view_t v;
    int li;
    int64_t unit;
    char t[2][96];
    if (concat_batch_input(im, b, n, 0, &li, &v)) return -1;
    const int p = cut_axis(&v, given < 0 ? given + v.ng : given, &unit);
    if (p == 0 || unit)
        return imp_fail(im, "node '%s' (Concat): axis %lld of %s is out of range", imp_node_name(n), (long long)given,
                        view_text(&v, t[0], sizeof t[0]));
    for (size_t i = 1; i < n->n_input; i++) {
        int lj;
        view_t u, a;
        const int rc = concat_batch_input(im, b, n, i, &lj, &u);
        a = u;
        a.pd[p] = v.pd[p];
        if (rc || !view_same(&a, &v))
            return imp_fail(im, "node '%s' (Concat): input %zu is %s and input 0 %s: equal but along axis %lld",
                            imp_node_name(n), i, rc ? "no activation" : view_text(&u, t[1], sizeof t[1]),
                            view_text(&v, t[0], sizeof t[0]), (long long)given);
        li = model_build_concat_axis(b, li, lj, p - 1);
        if (model_build_failed(b))
            return imp_fail(
                im, "node '%s' (Concat): its %zu inputs joined exceed a bound of the model (its size or its layers)",
                imp_node_name(n), n->n_input);
        model_shape_t o;
        model_build_shape_nd(b, li, &o);
        v.pd[p] = o.dims[p - 1];
    }
    return view_define(im, n, 0, li, &v);
}

/* Concat of activations that holds the batch in the axis joined (concat_along_batch), or
 * of views (concat_along_axis); 1 for any other (do_concat's: a constant among the inputs,
 * plain activations along an axis without the batch). */
static int view_concat(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", NULL};
    int viewed = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const value_t *y = n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
        if (!y || y->kind != V_LAYER || y->lead || y->defer) return 1;
        viewed |= y->viewed;
    }
    const value_t *x = n->n_input ? imp_find_value(im, n->input[0]) : NULL;
    if (!x) return 1;
    /* whether the axis joined holds the batch: the first of a plain or flattened value */
    const int64_t given = imp_attr_int(n, "axis", 0);
    int nb = 0;
    if (x->viewed) {
        const int64_t g = given < 0 ? given + x->view.ng : given;
        int e = 0;
        for (int h = 0; h < g && g < x->view.ng; h++) e += x->view.gn[h];
        for (int f = 0; g >= 0 && g < x->view.ng && f < x->view.gn[g]; f++) nb |= x->view.ax[e + f] == 0;
    } else {
        model_shape_t s;
        model_build_shape_nd(b, x->layer, &s);
        nb = given == 0 || given == -(x->flat ? 2 : s.rank + 1);
    }
    if (!nb && !viewed) return 1;
    if (imp_check_attrs(im, n, known)) return -1;
    return nb ? concat_along_batch(im, b, n, given) : concat_along_axis(im, b, n, given);
}

/* The graph axes node n names (the attribute "axes", or its constant input 1) as a mask of
 * the rank axes; -1 with the reason for one out of range or named twice. */
static int node_axes(imp_t *im, const Onnx__NodeProto *n, int rank, unsigned *mask)
{
    int64_t ax[INTS_MAX];
    int na;
    *mask = 0;
    if (axes_list(im, n, ax, &na)) return -1;
    for (int i = 0; i < na; i++) {
        const int64_t k = ax[i] < 0 ? ax[i] + rank : ax[i];
        if (k < 0 || k >= rank || (*mask >> k & 1))
            return imp_fail(im, "node '%s' (%s): axis %lld is out of range or named twice", imp_node_name(n),
                            n->op_type, (long long)ax[i]);
        *mask |= 1u << k;
    }
    return 0;
}

/* ReduceMean or ReduceSum of a view over axes without the batch (torch.stack(xs).mean(0)):
 * in normal form each is one physical axis, reduced there (LAYER_REDUCE_*, kept as 1), its
 * group dropped without keepdims; 1 when the normal form is plain (do_reduce's, and its
 * layer norm pattern's). */
static int view_reduce(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, value_t *x)
{
    static const char *const known[] = {"axes", "keepdims", "noop_with_empty_axes", NULL};
    unsigned gmask, mask = 0;
    char t[96];
    int64_t unit;
    if (imp_check_attrs(im, n, known)) return -1;
    view_normal(b, &x->layer, &x->view); /* for later readers too */
    x->viewed = !view_is_plain(&x->view);
    if (!x->viewed) return 1;
    view_t v = x->view;
    if (node_axes(im, n, v.ng, &gmask)) return -1;
    if (!gmask && imp_attr_int(n, "noop_with_empty_axes", 0)) return view_define(im, n, 0, x->layer, &v);
    if (!gmask)
        return imp_fail(im,
                        "node '%s' (%s): of %s, no axes: the reduction over every axis, the batch's too, is not "
                        "supported",
                        imp_node_name(n), n->op_type, view_text(&v, t, sizeof t));
    for (int g = 0; g < v.ng; g++) {
        const int p = gmask >> g & 1 ? cut_axis(&v, g, &unit) : -1;
        if (p == 0 || unit)
            return imp_fail(im,
                            "node '%s' (%s): axis %d of %s holds the batch: a reduction across samples is not "
                            "supported",
                            imp_node_name(n), n->op_type, g, view_text(&v, t, sizeof t));
        if (p > 0) mask |= 1u << (p - 1);
    }
    int li = model_build_reduce(b, n->op_type[6] == 'M' ? LAYER_REDUCE_MEAN : LAYER_REDUCE_SUM, x->layer, mask, 1);
    for (int g = v.ng - 1; g >= 0; g--) {
        if (!(gmask >> g & 1)) continue;
        v.pd[cut_axis(&v, g, &unit)] = 1;
        if (!imp_attr_int(n, "keepdims", 1)) v = view_drop(&v, g);
    }
    if (!imp_attr_int(n, "keepdims", 1)) {
        model_shape_t to = view_sample(&v);
        li = model_build_reshape(b, li, &to);
    }
    return view_define(im, n, 0, li, &v);
}

/* Whether Unsqueeze n of the plain value x puts a new axis in front of its batch (torch.stack
 * along axis 0): a view then (view_squeeze); 0 for any other, or axes it cannot read. */
static int unsqueeze_moves_batch(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    model_shape_t s;
    int64_t ax[INTS_MAX];
    int na;
    if (axes_list(im, n, ax, &na)) return 0; /* do_squeeze says why */
    model_build_shape_nd(b, x->layer, &s);
    for (int i = 0; i < na; i++)
        if (ax[i] == 0 || ax[i] == -(1 + s.rank + na)) return 1;
    return 0;
}

/* The nodes that read a view or make one (view_t); 1 when n is none of them, its viewed
 * inputs then made plain for its own handler. */
int view_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, view_translate_fn translate)
{
    static const char *const elementwise[] = {"Dropout", "Erf",         "Relu",      "LeakyRelu",  "Sigmoid", "Tanh",
                                              "Exp",     "Neg",         "Sqrt",      "Reciprocal", "Abs",     "Pow",
                                              "Clip",    "HardSigmoid", "HardSwish", "Identity",   NULL};
    const char *op = n->op_type;
    value_t *in[4] = {NULL, NULL, NULL, NULL};
    int viewed = 0, flat = 0, lead = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        value_t *x = n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
        if (!x || x->kind != V_LAYER) continue;
        if (i < 4) in[i] = x; /* the operands the view readers look at */
        viewed |= x->viewed;
        flat |= x->flat;
        lead |= x->lead || x->defer;
    }
    value_t *x = in[0];
    /* a lead or deferred value (Swin's windows in the batch, see view_t) is its own
     * handlers'; no operator pairs it with a view */
    if (lead && viewed)
        return imp_fail(im,
                        "node '%s' (%s): reads a Reshape to (N * k, ...) and a tensor whose batch axis a Transpose or "
                        "Reshape moved or merged",
                        imp_node_name(n), op);
    if (flat && !lead && strcmp(op, "Transpose") == 0 && x && x->flat) return flat_transpose(im, b, n, x);
    if (!lead && strcmp(op, "Concat") == 0 && x) {
        const int rc = view_concat(im, b, n);
        if (rc <= 0) return rc;
    }
    if (lead || flat || (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)) return 1;
    if (strcmp(op, "Transpose") == 0 && x) {
        static const char *const known[] = {"perm", NULL};
        const Onnx__AttributeProto *a = imp_attr(n, "perm");
        if (!x->viewed && !(a && a->n_ints > 0 && a->ints[0] != 0)) return 1;
        return imp_check_attrs(im, n, known) ? -1 : view_transpose(im, b, n, x);
    }
    if (strcmp(op, "Reshape") == 0 && x) {
        static const char *const known[] = {"allowzero", NULL};
        int64_t sh[INTS_MAX];
        int nsh, ssh, moved = 0;
        if (imp_input_ints(im, n, 1, sh, &nsh, &ssh) != 0) return 1;
        /* the batch first, even times k, is do_reshape's (k > 1: a lead value) */
        for (int i = 1; i < nsh; i++) moved |= is_batch(sh[i]);
        if (!x->viewed && !moved) return 1;
        if (imp_check_attrs(im, n, known) || imp_attr_int(n, "allowzero", 0) != 0)
            return imp_fail(im, "node '%s' (Reshape): allowzero = 1 is not supported", imp_node_name(n));
        return view_reshape(im, b, n, x, sh, nsh);
    }
    if (strcmp(op, "Unsqueeze") == 0 && x && !x->viewed && unsqueeze_moves_batch(im, b, n, x))
        return view_squeeze(im, b, n, x, 1);
    if (!viewed) return 1;
    if ((strcmp(op, "ReduceMean") == 0 || strcmp(op, "ReduceSum") == 0) && x && x->viewed) {
        const int rc = view_reduce(im, b, n, x);
        if (rc <= 0) return rc;
        viewed = 0; /* x is plain now, for do_reduce */
    }
    view_t v;
    int li;
    if (strcmp(op, "Shape") == 0) {
        static const char *const none[] = {NULL};
        int64_t d[VIEW_AXES];
        if (imp_check_attrs(im, n, none)) return -1;
        view_get(b, x, &v);
        view_dims(&v, d);
        return imp_define_ints(im, n, d, v.ng, 0);
    }
    for (int k = 0; elementwise[k]; k++)
        if (strcmp(op, elementwise[k]) == 0 && x && x->viewed) return view_through(im, b, n, &x->view, translate);
    const int binary = strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
                       strcmp(op, "Div") == 0;
    if (binary && n->n_input == 2 && in[0] && in[1] && in[0]->viewed && in[1]->viewed &&
        view_same(&in[0]->view, &in[1]->view) && in[0]->layer >= 0 && in[1]->layer >= 0)
        return view_through(im, b, n, &in[0]->view, translate);
    const int ci = !in[0] ? 0 : !in[1] ? 1 : -1; /* the constant operand of a binary node */
    const int softmax = strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0;
    const int matmul_w = strcmp(op, "MatMul") == 0 && x && n->n_input == 2 && !in[1];
    if ((binary && n->n_input == 2 && ci >= 0 && last_axis_const(im, n, (size_t)ci)) || matmul_w || softmax) {
        value_t *a = binary ? in[ci == 0 ? 1 : 0] : x;
        if (!a || !a->viewed) goto plain;
        view_get(b, a, &v);
        const int64_t ax = imp_attr_int(n, "axis", -1);
        if (softmax && ax != -1 && ax != v.ng - 1)
            return imp_fail(im, "node '%s' (%s): of a view of the batch: only along the last axis", imp_node_name(n),
                            op);
        const size_t ai = (size_t)(a - im->vals);
        if (view_last(im, b, n, a, 0, &li, &v)) return -1;
        a = &im->vals[ai];
        a->layer = li; /* the view in normal form, for later readers too */
        a->view = v;
        a->viewed = !view_is_plain(&v);
        if (!a->viewed) return 1;
        if (softmax)
            return view_define(im, n, 0,
                               model_build_softmax(b, op[0] == 'L' ? LAYER_LOG_SOFTMAX : LAYER_SOFTMAX, li, v.np - 2),
                               &v);
        return view_through(im, b, n, &v, translate);
    }
    if (strcmp(op, "Gemm") == 0 && x && x->viewed) return view_gemm(im, b, n, x);
    if (strcmp(op, "MatMul") == 0 && n->n_input == 2 && in[0] && in[1]) return view_bmm(im, b, n, in[0], in[1]);
    if (strcmp(op, "Slice") == 0 && x && x->viewed) return view_slice(im, b, n, x);
    if (strcmp(op, "Gather") == 0 && x && x->viewed) return view_gather(im, b, n, x);
    if (strcmp(op, "Split") == 0 && x && x->viewed) return view_split(im, b, n, x);
    if ((strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0) && x && x->viewed)
        return view_squeeze(im, b, n, x, op[0] == 'U');
plain:
    /* every input, a Concat's fifth too */
    for (size_t i = 0; i < n->n_input; i++) {
        value_t *y = n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
        if (y && y->kind == V_LAYER && y->viewed && view_plain(im, b, n, y)) return -1;
    }
    return 1;
}
