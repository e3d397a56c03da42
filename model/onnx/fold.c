/* model/onnx/fold.c - see fold.h. */
#include "fold.h"

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

/* ONNX's clamping of a Slice bound v on an axis of dim elements, for steps of either sign
 * (a negative step walks from start down to end + 1; end -1 is before the first) */
int64_t slice_bound_step(int64_t v, int64_t dim, int64_t step)
{
    if (v < 0) v += dim;
    if (step > 0) return v < 0 ? 0 : v > dim ? dim : v;
    return v < -1 ? -1 : v > dim - 1 ? dim - 1 : v;
}

/* Squeeze, Slice, Not, Where, Range and ConstantOfShape of int vectors (the rest of the
 * exporter's shape arithmetic: sizes computed from x.shape); 1 when n's inputs are no int
 * vectors (a layer's operator then). The batch, a symbol, may pass through Squeeze, Slice
 * and Where's branches, and enter nothing else. */
int fold_ints(imp_t *im, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL}, *const axes[] = {"axes", NULL}, *const value[] = {"value", NULL},
                             *const slice_attrs[] = {"starts", "ends", "axes", NULL};
    const char *op = n->op_type;
    int64_t a[INTS_MAX], r[INTS_MAX], v[4][INTS_MAX];
    int na = 0, sa = 0, cnt[4] = {0, 0, 0, 0}, sc, nr = 0;
    if (strcmp(op, "ConstantOfShape") == 0) {
        /* a vector of shape a (one dimension) or a scalar (a empty), of the int64 value */
        const Onnx__AttributeProto *at = imp_attr(n, "value");
        int64_t fill = 0;
        if (imp_input_ints(im, n, 0, a, &na, &sa) != 0) return 1;
        if (!at || !at->t || imp_tensor_ints(at->t, &fill, 1) != 1) return 1; /* a float tensor: not shapes */
        if (imp_check_attrs(im, n, value) || sa || na > 1 || (na == 1 && (a[0] < 0 || a[0] > INTS_MAX)))
            return imp_fail(im, "node '%s' (ConstantOfShape): only a vector of at most %d ints is folded",
                            imp_node_name(n), INTS_MAX);
        nr = na ? (int)a[0] : 1;
        for (int i = 0; i < nr; i++) r[i] = fill;
        return imp_define_ints(im, n, r, nr, na == 0);
    }
    if (strcmp(op, "Range") == 0) {
        int64_t lim, d;
        int s1, s2, c1, c2;
        if (imp_input_ints(im, n, 0, a, &na, &sa) != 0 || imp_input_ints(im, n, 1, &lim, &c1, &s1) != 0 ||
            imp_input_ints(im, n, 2, &d, &c2, &s2) != 0)
            return 1;
        if (imp_check_attrs(im, n, none) || na != 1 || c1 != 1 || c2 != 1 || is_symbolic(a[0]) || is_symbolic(lim) ||
            is_symbolic(d) || d == 0)
            return imp_fail(im, "node '%s' (Range): start, limit and delta must be constant scalars, delta not 0",
                            imp_node_name(n));
        /* max(ceil((limit - start) / delta), 0) elements; a step past INT64's range ends it */
        for (int64_t x = a[0]; d > 0 ? x < lim : x > lim;) {
            if (nr == INTS_MAX)
                return imp_fail(im, "node '%s' (Range): more than %d values are not folded", imp_node_name(n), INTS_MAX);
            r[nr++] = x;
            if (__builtin_add_overflow(x, d, &x)) break;
        }
        return imp_define_ints(im, n, r, nr, 0);
    }
    if (imp_input_sym(im, n, 0, a, &na, &sa) != 0) return 1;
    if (strcmp(op, "Not") == 0) {
        if (imp_check_attrs(im, n, none)) return -1;
        for (int i = 0; i < na; i++) {
            if (is_symbolic(a[i])) return imp_fail(im, "node '%s' (Not): of the batch size", imp_node_name(n));
            r[i] = !a[i];
        }
        return imp_define_ints(im, n, r, na, sa);
    }
    if (strcmp(op, "Where") == 0) {
        int64_t *x = v[0], *y = v[1];
        int nx, ny, sx, sy;
        if (imp_input_sym(im, n, 1, x, &nx, &sx) != 0 || imp_input_sym(im, n, 2, y, &ny, &sy) != 0) return 1;
        nr = na > nx ? na : nx;
        nr = nr > ny ? nr : ny;
        if (imp_check_attrs(im, n, none) || (na != nr && na != 1) || (nx != nr && nx != 1) || (ny != nr && ny != 1))
            return imp_fail(im, "node '%s' (Where): shape vectors of %d, %d and %d values", imp_node_name(n), na, nx,
                            ny);
        for (int i = 0; i < nr; i++) {
            const int64_t c = a[na == 1 ? 0 : i];
            if (is_symbolic(c))
                return imp_fail(im, "node '%s' (Where): a condition of the batch size", imp_node_name(n));
            r[i] = c ? x[nx == 1 ? 0 : i] : y[ny == 1 ? 0 : i];
        }
        return imp_define_ints(im, n, r, nr, sa && sx && sy);
    }
    if (strcmp(op, "Squeeze") == 0) {
        /* a 1-element vector to a scalar (axes none, 0 or -1) */
        int64_t ax[INTS_MAX];
        int nx = 0, sx;
        const Onnx__AttributeProto *at = imp_attr(n, "axes");
        if (at && at->n_ints <= INTS_MAX)
            for (size_t i = 0; i < at->n_ints; i++) ax[nx++] = at->ints[i];
        else if (!at && imp_input_ints(im, n, 1, ax, &nx, &sx) != 0) nx = 0;
        if (imp_check_attrs(im, n, axes) || sa || na != 1 || nx > 1 || (nx == 1 && ax[0] != 0 && ax[0] != -1))
            return imp_fail(im, "node '%s' (Squeeze): only a 1-element shape vector to a scalar is folded",
                            imp_node_name(n));
        return imp_define_ints(im, n, a, 1, 1);
    }
    /* Slice of a shape vector (axis 0): bounds as inputs (opset 10) or attributes (before) */
    static const char *const what[3] = {"starts", "ends", "axes"};
    for (int i = 0; i < 4; i++) {
        const Onnx__AttributeProto *at = i < 3 ? imp_attr(n, what[i]) : NULL;
        if (at && at->n_ints <= INTS_MAX)
            for (size_t j = 0; j < at->n_ints; j++) v[i][cnt[i]++] = at->ints[j];
        else if ((size_t)i + 1 < n->n_input && n->input[i + 1][0] &&
                 imp_input_ints(im, n, (size_t)i + 1, v[i], &cnt[i], &sc) != 0)
            return imp_fail(im, "node '%s' (Slice): starts, ends, axes and steps must be constants", imp_node_name(n));
    }
    /* a step beyond the vector's length takes one element: clamped, so that no index overflows */
    const int64_t step = !cnt[3]               ? 1
                         : v[3][0] > INTS_MAX  ? INTS_MAX + 1
                         : v[3][0] < -INTS_MAX ? -INTS_MAX - 1
                                               : v[3][0];
    if (imp_check_attrs(im, n, slice_attrs) || sa || cnt[0] != 1 || cnt[1] != 1 || (cnt[2] && cnt[2] != 1) ||
        (cnt[3] && cnt[3] != 1) || (cnt[2] && v[2][0] != 0 && v[2][0] != -1) || step == 0)
        return imp_fail(im, "node '%s' (Slice): of a shape vector: one axis (0), a step not 0", imp_node_name(n));
    for (int64_t i = slice_bound_step(v[0][0], na, step), e = slice_bound_step(v[1][0], na, step);
         step > 0 ? i < e : i > e; i += step)
        r[nr++] = a[i];
    return imp_define_ints(im, n, r, nr, 0);
}

/* Floor of a / d for d >= 1 (C's / truncates) */
static int64_t floor_div(int64_t a, int64_t d) { return a / d - (a % d != 0 && a < 0); }

/* op (Add, Sub, Mul, Div, Equal, Mod) of u and v, one of them the batch as k N + c
 * (is_symbolic; N >= 1, any): sums and differences add their parts (a difference whose N
 * cancels is a constant); a product by a constant m >= 1 multiplies both; k N + c divided
 * by a d that divides k is (k / d) N + floor(c / d), and its Mod d is c's, both where k + c
 * >= 0 so that no N makes the dividend negative (ONNX's integer Div truncates); equality is
 * known where the parts are equal, or where no whole N >= 1 makes them so. Anything
 * else (N * N, N / 2) and results beyond sym_value's bounds give INT64_MAX. (Declared in
 * fold.h for tests/unit/test_onnx_import.c, which checks it on a table.) */
int64_t fold_sym_arith(const char *op, int64_t u, int64_t v)
{
    int64_t ku, cu, kv, cv;
    sym_parts(u, &ku, &cu);
    sym_parts(v, &kv, &cv);
    if (op[0] == 'E') {
        /* (ku - kv) N = cv - cu: never where no whole N >= 1 solves it */
        const int64_t dk = ku - kv, dc = cv - cu;
        if (dk == 0) return dc == 0;
        return dc % dk != 0 || dc / dk < 1 ? 0 : INT64_MAX;
    }
    if (op[0] == 'A') return sym_value(ku + kv, cu + cv);
    if (op[0] == 'S') return ku < kv ? INT64_MAX : sym_value(ku - kv, cu - cv);
    if (op[0] == 'M' && op[1] == 'u') {
        const int64_t k = ku ? ku : kv, c = ku ? cu : cv, m = ku ? cv : cu;
        if ((ku && kv) || m < 1 || m > DIM_MAX || k * m > DIM_MAX) return INT64_MAX;
        return sym_value(k * m, c * m);
    }
    /* Div and Mod: of the batch by a constant */
    if (!ku || kv || cv < 1 || ku % cv != 0 || ku + cu < 0) return INT64_MAX;
    return op[0] == 'D' ? sym_value(ku / cv, floor_div(cu, cv)) : cu - floor_div(cu, cv) * cv;
}

/* op (Add, Sub, Mul, Div, Equal, Mod) of two shape values read from the file (neither the
 * batch symbol, v not 0 for Div and Mod) into *r: 0, or -1 when the result leaves
 * +-MODEL_DIM_ARITH_MAX (784 * (2^60 + 1) must not wrap to 784). ONNX's integer Div
 * truncates; its Mod takes the divisor's sign (Python's %) unless fmod = 1 (C's). */
static int shape_arith(const char *op, int64_t u, int64_t v, int fmod, int64_t *r)
{
    if (op[0] == 'A') return model_dim_add(u, v, r);
    if (op[0] == 'S') return model_dim_sub(u, v, r);
    if (op[0] == 'E') return *r = u == v, 0;
    if (op[0] == 'M' && op[1] == 'u') return model_dim_mul(u, v, r);
    /* INT64_MIN / -1 is the one quotient that overflows: a value that large is refused */
    if (u < -MODEL_DIM_ARITH_MAX || u > MODEL_DIM_ARITH_MAX) return -1;
    if (op[0] == 'D') return *r = u / v, 0;
    const int64_t q = u % v;
    *r = !fmod && q != 0 && (q < 0) != (v < 0) ? q + v : q;
    return 0;
}

/* Add, Sub, Mul, Div, Equal and Mod of shape vectors (the exporter's c // g), elementwise
 * with a scalar broadcast; the batch, a symbol, enters as fold_sym_arith allows; 1 when n's
 * inputs are no int vectors. */
int fold_shape_arith(imp_t *im, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL}, *const fmod_attr[] = {"fmod", NULL};
    const char *op = n->op_type;
    int64_t a[INTS_MAX], c[INTS_MAX], r[INTS_MAX];
    int na, sa, nc, scl;
    if (imp_input_sym(im, n, 0, a, &na, &sa) != 0 || imp_input_sym(im, n, 1, c, &nc, &scl) != 0) return 1;
    const int fmod = imp_attr_int(n, "fmod", 0) != 0;
    if (imp_check_attrs(im, n, op[0] == 'M' && op[1] == 'o' ? fmod_attr : none) || (na != nc && na != 1 && nc != 1))
        return imp_fail(im, "node '%s' (%s): shape vectors of %d and %d values", imp_node_name(n), op, na, nc);
    const int nr = na > nc ? na : nc;
    for (int i = 0; i < nr; i++) {
        const int64_t u = a[na == 1 ? 0 : i], v = c[nc == 1 ? 0 : i];
        const int mod = op[0] == 'M' && op[1] == 'o';
        if (is_symbolic(u) || is_symbolic(v)) {
            if ((r[i] = fold_sym_arith(op, u, v)) == INT64_MAX)
                return imp_fail(im,
                                "node '%s' (%s): the batch size enters shape arithmetic that is not k * N + c (only "
                                "sums, differences, products by a positive constant and divisions that leave N "
                                "whole pass)",
                                imp_node_name(n), op);
            continue;
        }
        if ((op[0] == 'D' || mod) && v == 0)
            return imp_fail(im, "node '%s' (%s): an integer division by 0", imp_node_name(n), op);
        if (shape_arith(op, u, v, fmod, &r[i]) != 0)
            return imp_fail(im, "node '%s' (%s): shape arithmetic %lld %s %lld overflows (beyond 2^62)",
                            imp_node_name(n), op, (long long)u,
                            op[0] == 'A'   ? "+"
                            : op[0] == 'S' ? "-"
                            : mod          ? "%"
                            : op[0] == 'M' ? "*"
                                           : "/",
                            (long long)v);
    }
    return imp_define_ints(im, n, r, nr, sa && scl);
}

/* ---- constant tensors (Swin's masks and indices) ---------------------------------------- */

/* A constant tensor computed at import from constants alone (ARR_* bounds): Swin's
 * shifted-window attention mask (new_zeros, slice assignment = ScatterND, Sub, Equal,
 * Where), its pads and index grids (Range, Expand, Concat), and a parameter's movement before
 * an activation reads it (a relative position bias: Gather of the table by constant
 * indices, Reshape, Transpose, Unsqueeze). Values are doubles (ints exact below 2^53); a
 * tagged array (table set) holds flat indices into that float initializer, which any
 * movement keeps and arithmetic refuses. Owned by the value (freed with the importer's). */
#define ARR_RANK 8
#define ARR_MAX ((size_t)1 << 22)       /* elements of one folded tensor */
#define ARR_TOTAL_MAX ((size_t)1 << 25) /* elements folded in one import */
#define ARR_INT_MAX 9007199254740992.0  /* 2^53: an int beyond it is not exact */

typedef struct {
    int rank;
    int64_t dims[ARR_RANK];
    size_t count;
    double *v;
    int is_float;
    const char *table; /* a tagged array's float initializer, else NULL */
} arr_t;

static void arr_free(arr_t *a)
{
    free(a->v);
    a->v = NULL;
}

/* Sets a's count from its dims and allocates v; 0, or -1 with the reason (n: the node). */
static int arr_alloc(imp_t *im, const Onnx__NodeProto *n, arr_t *a)
{
    size_t c = 1;
    if (a->rank < 0 || a->rank > ARR_RANK)
        return imp_fail(im, "node '%s' (%s): a folded constant of rank %d (at most %d)", imp_node_name(n), n->op_type,
                        a->rank, ARR_RANK);
    for (int d = 0; d < a->rank; d++) {
        if (a->dims[d] < 0 || a->dims[d] > DIM_MAX)
            return imp_fail(im, "node '%s' (%s): a folded constant's dimension %lld is out of range", imp_node_name(n),
                            n->op_type, (long long)a->dims[d]);
        c *= (size_t)a->dims[d];
        if (c > ARR_MAX) break;
    }
    if (c > ARR_MAX || im->folded + c > ARR_TOTAL_MAX)
        return imp_fail(im,
                        "node '%s' (%s): a folded constant of more than %zu elements (or %zu in all) is not supported",
                        imp_node_name(n), n->op_type, ARR_MAX, ARR_TOTAL_MAX);
    im->folded += c;
    a->count = c;
    a->v = malloc((c ? c : 1) * sizeof *a->v);
    return a->v ? 0 : imp_fail(im, "out of memory");
}

/* The raw values of tensor t (float, double, int64, int32, bool, uint8, int8) into a. */
static int arr_of_tensor(imp_t *im, const Onnx__NodeProto *n, const Onnx__TensorProto *t, arr_t *a)
{
    const int type = t->has_data_type ? t->data_type : 0;
    static const int size_of[] = {[1] = 4, [2] = 1, [3] = 1, [6] = 4, [7] = 8, [9] = 1, [11] = 8};
    const int sz = type > 0 && type < (int)(sizeof size_of / sizeof size_of[0]) ? size_of[type] : 0;
    if (!sz || (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return imp_fail(im,
                        "node '%s' (%s): constant '%s' of data type %d is not folded (float, double, int and bool only)",
                        imp_node_name(n), n->op_type, t->name ? t->name : "", type);
    a->rank = (int)t->n_dims;
    for (int d = 0; d < a->rank && d < ARR_RANK; d++) a->dims[d] = t->dims[d];
    a->is_float = type == 1 || type == 11;
    if (arr_alloc(im, n, a)) return -1;
    const size_t c = a->count;
    const uint8_t *raw = t->has_raw_data ? t->raw_data.data : NULL;
    const size_t have = raw          ? t->raw_data.len / (size_t)sz
                        : type == 1  ? t->n_float_data
                        : type == 11 ? t->n_double_data
                        : type == 7  ? t->n_int64_data
                                     : t->n_int32_data; /* int32, bool, uint8, int8 */
    if (have != c || (raw && t->raw_data.len != c * (size_t)sz))
        return arr_free(a), imp_fail(im, "node '%s' (%s): constant '%s' holds %zu values for %zu elements",
                                     imp_node_name(n), n->op_type, t->name ? t->name : "", have, c);
    for (size_t i = 0; i < c; i++) {
        double v;
        if (raw) {
            const uint8_t *p = raw + i * (size_t)sz;
            float f;
            double g;
            int64_t l;
            int32_t k;
            switch (type) {
            case 1: memcpy(&f, p, 4), v = f; break;
            case 11: memcpy(&g, p, 8), v = g; break;
            case 7: memcpy(&l, p, 8), v = (double)l; break;
            case 6: memcpy(&k, p, 4), v = k; break;
            case 3: v = (int8_t)p[0]; break;
            default: v = p[0]; break;
            }
        } else
            v = type == 1    ? t->float_data[i]
                : type == 11 ? t->double_data[i]
                : type == 7  ? (double)t->int64_data[i]
                             : t->int32_data[i];
        a->v[i] = v;
    }
    return 0;
}

/* Whether value v is a constant the folding reads: a tensor, a folded array, or an int
 * vector without the batch symbol. */
static int is_constant(const value_t *v)
{
    if (!v) return 0;
    if (v->kind == V_TENSOR || v->kind == V_ARRAY) return !v->transposed;
    if (v->kind != V_INTS) return 0;
    for (int i = 0; i < v->nints; i++)
        if (is_symbolic(v->ints[i])) return 0;
    return 1;
}

/* Input i of n as an array (a copy, freed by the caller): a float initializer read where
 * tag allows it (the data of a movement) becomes a tagged array of its flat indices. */
static int arr_in(imp_t *im, const Onnx__NodeProto *n, size_t i, arr_t *a, int tag)
{
    memset(a, 0, sizeof *a);
    const value_t *v = i < n->n_input && n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
    if (!is_constant(v))
        return imp_fail(im, "node '%s' (%s): input %zu is not a constant", imp_node_name(n), n->op_type, i);
    if (v->kind == V_INTS) {
        a->rank = v->scalar ? 0 : 1;
        a->dims[0] = v->nints;
        if (arr_alloc(im, n, a)) return -1;
        for (int k = 0; k < v->nints; k++) a->v[k] = (double)v->ints[k];
        return 0;
    }
    if (v->kind == V_ARRAY) {
        a->rank = v->arank;
        memcpy(a->dims, v->adims, sizeof a->dims);
        a->is_float = v->afloat;
        a->table = v->table;
        if (arr_alloc(im, n, a)) return -1;
        memcpy(a->v, v->arr, a->count * sizeof *a->v);
        return 0;
    }
    const Onnx__TensorProto *t = v->tensor;
    if (tag && !v->constant_node && t->has_data_type && t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        a->rank = (int)t->n_dims;
        for (int d = 0; d < a->rank && d < ARR_RANK; d++) a->dims[d] = t->dims[d];
        if (a->rank > MODEL_MAX_RANK || imp_tensor_count(t) < 1 || imp_tensor_count(t) >= ((int64_t)1 << 24))
            return imp_fail(im,
                            "node '%s' (%s): parameter '%s' gathered or moved must have 1 to 2^24 elements and at "
                            "most %d axes",
                            imp_node_name(n), n->op_type, n->input[i], MODEL_MAX_RANK);
        if (arr_alloc(im, n, a)) return -1;
        for (size_t k = 0; k < a->count; k++) a->v[k] = (double)k;
        a->table = n->input[i];
        a->is_float = 1;
        return 0;
    }
    return arr_of_tensor(im, n, t, a);
}

/* Defines n's output o as array a (ownership moves to the value). */
static int define_array(imp_t *im, const Onnx__NodeProto *n, size_t o, arr_t *a)
{
    value_t *v = o < n->n_output && n->output[o][0] ? imp_add_value(im, n->output[o], V_ARRAY) : NULL;
    if (!v) return arr_free(a), imp_fail(im, "node '%s' (%s): no output", imp_node_name(n), n->op_type);
    v->arr = a->v;
    v->arank = a->rank;
    memcpy(v->adims, a->dims, sizeof v->adims);
    v->acount = a->count;
    v->afloat = a->is_float;
    v->table = a->table;
    a->v = NULL;
    return 0;
}

/* an int of a (index i) within [lo, hi], else -1 with the reason */
static int arr_int(imp_t *im, const Onnx__NodeProto *n, const arr_t *a, size_t i, int64_t lo, int64_t hi, int64_t *out)
{
    const double v = a->v[i];
    if (!(v >= (double)lo && v <= (double)hi) || v != floor(v))
        return imp_fail(im, "node '%s' (%s): value %g is not an integer in [%lld, %lld]", imp_node_name(n), n->op_type,
                        v, (long long)lo, (long long)hi);
    *out = (int64_t)v;
    return 0;
}

/* Contiguous strides of a's dims right-aligned to rank r, 0 along axes a broadcasts. */
static void arr_strides(const arr_t *a, int r, size_t *st)
{
    size_t run = 1;
    for (int ax = r - 1; ax >= 0; ax--) {
        const int d = ax - (r - a->rank);
        st[ax] = d >= 0 && a->dims[d] > 1 ? run : 0;
        if (d >= 0) run *= (size_t)a->dims[d];
    }
}

/* the flat index, at strides st, of output element o of dims (rank r) */
static size_t arr_at(size_t o, const int64_t *dims, int r, const size_t *st)
{
    size_t idx = 0;
    for (int ax = r - 1; ax >= 0; ax--) {
        idx += o % (size_t)dims[ax] * st[ax];
        o /= (size_t)dims[ax];
    }
    return idx;
}

/* NumPy's broadcast of the k arrays' shapes into out (dims only); 0, or -1. */
static int arr_bcast(imp_t *im, const Onnx__NodeProto *n, const arr_t *in, int k, arr_t *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < k; i++) out->rank = in[i].rank > out->rank ? in[i].rank : out->rank;
    for (int ax = 0; ax < out->rank; ax++) {
        int64_t d = 1;
        for (int i = 0; i < k; i++) {
            const int a = ax - (out->rank - in[i].rank);
            const int64_t e = a >= 0 ? in[i].dims[a] : 1;
            if (e != 1 && d != 1 && e != d)
                return imp_fail(im, "node '%s' (%s): folded constants of shapes that do not broadcast",
                                imp_node_name(n), n->op_type);
            if (e != 1) d = e;
        }
        out->dims[ax] = d;
    }
    return arr_alloc(im, n, out);
}

/* A tagged array's values read from its initializer: a comparison (Equal) of a parameter
 * has no gradient, so its values are all it needs (torch's registered causal mask, `mask
 * == 0`, is such an initializer); 0, or -1 when they cannot be read. */
static int arr_untag(imp_t *im, const Onnx__NodeProto *n, arr_t *a)
{
    const value_t *t = imp_find_value(im, a->table);
    if (!t || t->kind != V_TENSOR) return -1;
    const int64_t count = imp_tensor_count(t->tensor);
    float *data = count > 0 && count < ((int64_t)1 << 24) ? malloc((size_t)count * sizeof *data) : NULL;
    if (!data || imp_tensor_floats(im, t->tensor, data, (size_t)count) != 0) return free(data), -1;
    for (size_t k = 0; k < a->count; k++) {
        const double at = a->v[k];
        a->v[k] = at >= 0 && at < (double)count ? (double)data[(size_t)at] : 0.0;
    }
    free(data);
    a->table = NULL;
    return 0;
}

/* Elementwise operators of constants (broadcast): Add, Sub, Mul, Div, Mod, Pow, Equal, Not,
 * Where, Cast, Neg, Sqrt. Ints stay exact (a result beyond 2^53 is refused). */
static int fold_elementwise(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out)
{
    static const char *const cast_attrs[] = {"to", NULL}, *const mod_attrs[] = {"fmod", NULL}, *const none[] = {NULL},
                             *const six[] = {"broadcast", NULL};
    const char *op = n->op_type;
    /* an attribute is refused, not ignored: opset 6's axis of Add, Sub, Mul and Div aligns
     * the second operand otherwise than NumPy's rule; its broadcast (1: B aligned with A's
     * last axes, 0: equal shapes) reads as NumPy's rule on the shapes it allows */
    const int arith = strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
                      strcmp(op, "Div") == 0;
    if (imp_check_attrs(im, n,
                        strcmp(op, "Cast") == 0  ? cast_attrs
                        : strcmp(op, "Mod") == 0 ? mod_attrs
                        : arith && im->opset < 7 ? six
                                                 : none))
        return -1;
    const int64_t bc = imp_attr_int(n, "broadcast", 0);
    if (bc != 0 && bc != 1) return imp_fail(im, "node '%s' (%s): broadcast must be 0 or 1", imp_node_name(n), op);
    /* each operator's own count of inputs: Where's third is read, a binary's second */
    const int want = strcmp(op, "Where") == 0 ? 3
                     : strcmp(op, "Not") == 0 || strcmp(op, "Cast") == 0 || strcmp(op, "Neg") == 0 ||
                             strcmp(op, "Sqrt") == 0
                         ? 1
                         : 2;
    if (k != want) return imp_fail(im, "node '%s' (%s): %d inputs, want %d", imp_node_name(n), op, k, want);
    for (int i = 0; i < k; i++)
        if (in[i].table && (strcmp(op, "Equal") != 0 || arr_untag(im, n, &in[i]) != 0))
            return imp_fail(im,
                            "node '%s' (%s): arithmetic on parameter '%s' before an activation reads it is not supported",
                            imp_node_name(n), op, in[i].table);
    if (arr_bcast(im, n, in, k, out)) return -1;
    size_t st[3][ARR_RANK];
    for (int i = 0; i < k; i++) arr_strides(&in[i], out->rank, st[i]);
    const int is_int = !in[0].is_float && (k < 2 || !in[1].is_float);
    const int64_t to = strcmp(op, "Cast") == 0 ? imp_attr_int(n, "to", 1) : 0;
    out->is_float = strcmp(op, "Where") == 0                             ? in[1].is_float || in[2].is_float
                    : strcmp(op, "Cast") == 0                            ? to == 1 || to == 11 || to == 10 || to == 16
                    : strcmp(op, "Equal") == 0 || strcmp(op, "Not") == 0 ? 0
                                                                         : !is_int || strcmp(op, "Sqrt") == 0;
    /* the operator looked up once, not per element (a GPT's masks are 512 x 512 a block) */
    enum { F_ADD, F_SUB, F_MUL, F_EQUAL, F_NOT, F_NEG, F_SQRT, F_POW, F_WHERE, F_CAST, F_DIV, F_MOD } f;
    static const char *const names[] = {"Add",  "Sub", "Mul",   "Equal", "Not", "Neg",
                                        "Sqrt", "Pow", "Where", "Cast",  "Div", "Mod"};
    for (f = F_ADD; f < F_MOD && strcmp(op, names[f]) != 0; f++) {}
    const int fmod_c = f == F_MOD && imp_attr_int(n, "fmod", 0);
    /* an input of the output's shape is read at o itself */
    int whole[3];
    for (int i = 0; i < k; i++) whole[i] = in[i].count == out->count && in[i].rank == out->rank;
    for (size_t o = 0; o < out->count; o++) {
        size_t at[3] = {o, o, o};
        for (int i = 0; i < k; i++)
            if (!whole[i]) at[i] = arr_at(o, out->dims, out->rank, st[i]);
        const double a = in[0].v[at[0]], b = k > 1 ? in[1].v[at[1]] : 0.0;
        double r;
        switch (f) {
        case F_ADD: r = a + b; break;
        case F_SUB: r = a - b; break;
        case F_MUL: r = a * b; break;
        case F_EQUAL: r = a == b; break;
        case F_NOT: r = a == 0.0; break;
        case F_NEG: r = -a; break;
        case F_SQRT: r = sqrt(a); break;
        case F_POW: r = pow(a, b); break;
        case F_WHERE: r = a != 0.0 ? b : in[2].v[at[2]]; break;
        case F_CAST: r = out->is_float ? (to == 1 ? (double)(float)a : a) : to == 9 ? a != 0.0 : trunc(a); break;
        default:
            if (is_int && b == 0.0)
                return imp_fail(im, "node '%s' (%s): an integer division by 0", imp_node_name(n), op);
            if (f == F_DIV) r = is_int ? trunc(a / b) : a / b;
            else {
                /* Mod: the divisor's sign (Python's %) unless fmod = 1 (C's) */
                r = fmod(a, b);
                if (!fmod_c && r != 0.0 && (r < 0) != (b < 0)) r += b;
            }
        }
        if (!out->is_float && !(fabs(r) <= ARR_INT_MAX))
            return imp_fail(im, "node '%s' (%s): an integer result beyond 2^53 is not folded", imp_node_name(n), op);
        out->v[o] = r;
    }
    return 0;
}

/* The axes of n (attribute, or the input at index ai) normalised to rank r; count or -1. */
static int fold_axes(imp_t *im, const Onnx__NodeProto *n, size_t ai, int r, int *axes)
{
    int64_t ax[INTS_MAX];
    int na = 0, sc;
    const Onnx__AttributeProto *at = imp_attr(n, "axes");
    if (at && at->n_ints <= INTS_MAX)
        for (size_t i = 0; i < at->n_ints; i++) ax[na++] = at->ints[i];
    else if (at || (ai < n->n_input && n->input[ai][0] && imp_input_ints(im, n, ai, ax, &na, &sc) != 0))
        return imp_fail(im, "node '%s' (%s): axes must be a constant of at most %d values", imp_node_name(n),
                        n->op_type, INTS_MAX);
    for (int i = 0; i < na; i++) {
        const int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
        if (a < 0 || a >= r)
            return imp_fail(im, "node '%s' (%s): axis %lld is out of range", imp_node_name(n), n->op_type,
                            (long long)ax[i]);
        axes[i] = (int)a;
    }
    return na;
}

/* Flatten of a folded constant: out's two dims, the products of a's before and from the
 * axis; 0, or -1 with the reason. An array with a 0 axis holds nothing, so its other axes
 * may multiply past any bound: checked. */
static int flatten_dims(imp_t *im, const Onnx__NodeProto *n, const arr_t *a, arr_t *out)
{
    int64_t ax = imp_attr_int(n, "axis", 1), d0 = 1, d1 = 1;
    if (ax < 0) ax += a->rank;
    for (int d = 0; d < a->rank; d++)
        if (model_dim_mul(d < ax ? d0 : d1, a->dims[d], d < ax ? &d0 : &d1) != 0)
            return imp_fail(im, "node '%s' (Flatten): the folded constant's flattened shape overflows",
                            imp_node_name(n));
    out->rank = 2, out->dims[0] = d0, out->dims[1] = d1;
    return 0;
}

/* Movement of constants: Reshape, Transpose, Unsqueeze, Squeeze, Gather, Slice, Expand,
 * Concat, Identity (a tagged array stays tagged), and ConstantOfShape, Range, ScatterND, Shape. */
/* Identity, Reshape, Unsqueeze, Squeeze, Flatten of constants */
static int fold_reshape(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out, const size_t *ist)
{
    const char *op = n->op_type;
    if (op[0] == 'R') {
        int64_t sh[INTS_MAX];
        int ns = 0, sc, infer = -1;
        if (imp_input_ints(im, n, 1, sh, &ns, &sc) != 0 || sc)
            return imp_fail(im, "node '%s' (Reshape): the shape must be a constant of at most %d values",
                            imp_node_name(n), INTS_MAX);
        out->rank = ns;
        size_t prod = 1;
        for (int d = 0; d < ns; d++) {
            const int64_t v = sh[d] == 0 && d < in[0].rank ? in[0].dims[d] : sh[d];
            if (v == -1 && infer < 0) infer = d;
            else if (v < 0 || v > DIM_MAX)
                return imp_fail(im, "node '%s' (Reshape): dimension %lld of a folded constant's shape",
                                imp_node_name(n), (long long)sh[d]);
            out->dims[d] = v;
            if (v >= 0) prod *= (size_t)v;
            if (prod > ARR_MAX) break;
        }
        if (infer >= 0) out->dims[infer] = prod && in[0].count % prod == 0 ? (int64_t)(in[0].count / prod) : -1;
    } else if (op[0] == 'U' || op[0] == 'S') {
        int axes[INTS_MAX];
        const int unsq = op[0] == 'U';
        int64_t raw[INTS_MAX];
        int nraw = 0, sc;
        if (imp_attr(n, "axes")) nraw = (int)imp_attr(n, "axes")->n_ints;
        else if (n->n_input > 1 && imp_input_ints(im, n, 1, raw, &nraw, &sc) != 0) nraw = 0;
        const int na = fold_axes(im, n, 1, unsq ? in[0].rank + nraw : in[0].rank, axes);
        if (na < 0) return -1;
        unsigned mask = 0;
        for (int i = 0; i < na; i++) mask |= 1u << axes[i];
        if (unsq) {
            out->rank = in[0].rank + na;
            for (int d = 0, j = 0; d < out->rank && d < ARR_RANK; d++)
                out->dims[d] = (mask >> d) & 1 ? 1 : in[0].dims[j++];
        } else
            for (int d = 0; d < in[0].rank; d++)
                if (!(na ? (mask >> d) & 1 : in[0].dims[d] == 1)) out->dims[out->rank++] = in[0].dims[d];
    } else if (op[0] == 'F') {
        if (flatten_dims(im, n, &in[0], out) != 0) return -1;
    } else {
        out->rank = in[0].rank;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
    }
    if (arr_alloc(im, n, out)) return -1;
    if (out->count != in[0].count)
        return imp_fail(im, "node '%s' (%s): the folded constant's %zu elements do not fill the shape",
                        imp_node_name(n), op, in[0].count);
    memcpy(out->v, in[0].v, out->count * sizeof *out->v);
    return 0;
}

/* Transpose of constants */
static int fold_transpose(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out, const size_t *ist)
{
    const Onnx__AttributeProto *a = imp_attr(n, "perm");
    int perm[ARR_RANK];
    unsigned seen = 0;
    out->rank = in[0].rank;
    for (int d = 0; d < out->rank; d++) {
        perm[d] = a ? (a->n_ints == (size_t)out->rank && a->ints[d] >= 0 && a->ints[d] < out->rank ? (int)a->ints[d] : 0)
                    : out->rank - 1 - d;
        if (a && (a->n_ints != (size_t)out->rank || a->ints[d] < 0 || a->ints[d] >= out->rank || (seen >> perm[d]) & 1))
            return imp_fail(im, "node '%s' (Transpose): perm is not a permutation of the folded constant's axes",
                            imp_node_name(n));
        seen |= 1u << perm[d];
        out->dims[d] = in[0].dims[perm[d]];
    }
    if (arr_alloc(im, n, out)) return -1;
    size_t st[ARR_RANK];
    for (int d = 0; d < out->rank; d++) st[d] = ist[perm[d]];
    for (size_t o = 0; o < out->count; o++) out->v[o] = in[0].v[arr_at(o, out->dims, out->rank, st)];
    return 0;
}

/* Gather of constants */
static int fold_gather(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out, const size_t *ist)
{
    /* data[..., idx, ...] along axis: the index's shape takes the axis's place */
    int64_t ax = imp_attr_int(n, "axis", 0);
    if (ax < 0) ax += in[0].rank;
    if (ax < 0 || ax >= in[0].rank || in[1].table || in[1].is_float || in[0].rank + in[1].rank - 1 > ARR_RANK)
        return imp_fail(im, "node '%s' (Gather): axis %lld of a folded constant of rank %d by integer indices",
                        imp_node_name(n), (long long)imp_attr_int(n, "axis", 0), in[0].rank);
    out->rank = in[0].rank + in[1].rank - 1;
    for (int d = 0, j = 0; d < in[0].rank; d++) {
        if (d != ax) out->dims[j++] = in[0].dims[d];
        else
            for (int e = 0; e < in[1].rank; e++) out->dims[j++] = in[1].dims[e];
    }
    if (arr_alloc(im, n, out)) return -1;
    const size_t inner = ist[ax], dim = (size_t)in[0].dims[ax],
                 outer = inner * dim > 0 ? in[0].count / (inner * dim) : 0;
    size_t o = 0;
    for (size_t a = 0; a < outer; a++)
        for (size_t i = 0; i < in[1].count; i++) {
            int64_t k2 = 0;
            if (arr_int(im, n, &in[1], i, -(int64_t)dim, (int64_t)dim - 1, &k2)) return -1;
            if (k2 < 0) k2 += (int64_t)dim;
            for (size_t r = 0; r < inner; r++) out->v[o++] = in[0].v[(a * dim + (size_t)k2) * inner + r];
        }
    return 0;
}

/* Slice of constants */
static int fold_slice(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out, const size_t *ist)
{
    int64_t v[4][INTS_MAX];
    int cnt[4] = {0, 0, 0, 0}, sc;
    for (int i = 0; i < 4; i++)
        if ((size_t)i + 1 < n->n_input && n->input[i + 1][0] &&
            imp_input_ints(im, n, (size_t)i + 1, v[i], &cnt[i], &sc) != 0)
            return imp_fail(im, "node '%s' (Slice): starts, ends, axes and steps must be constants", imp_node_name(n));
    out->rank = in[0].rank;
    memcpy(out->dims, in[0].dims, sizeof out->dims);
    int64_t start[ARR_RANK] = {0}, step[ARR_RANK];
    for (int d = 0; d < ARR_RANK; d++) step[d] = 1;
    if (cnt[1] != cnt[0] || (cnt[2] && cnt[2] != cnt[0]) || (cnt[3] && cnt[3] != cnt[0]))
        return imp_fail(im, "node '%s' (Slice): starts, ends, axes and steps of one length are required",
                        imp_node_name(n));
    for (int i = 0; i < cnt[0]; i++) {
        int64_t ax = cnt[2] ? v[2][i] : i, s = cnt[3] ? v[3][i] : 1;
        if (ax < 0) ax += in[0].rank;
        if (ax < 0 || ax >= in[0].rank || s == 0 || s > DIM_MAX || s < -DIM_MAX)
            return imp_fail(im, "node '%s' (Slice): axis %lld step %lld of a folded constant", imp_node_name(n),
                            (long long)ax, (long long)s);
        const int64_t dim = in[0].dims[ax], b = slice_bound_step(v[0][i], dim, s), e = slice_bound_step(v[1][i], dim, s);
        const int64_t len = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (b > e ? (b - e - s - 1) / -s : 0);
        start[ax] = b, step[ax] = s, out->dims[ax] = len;
    }
    if (arr_alloc(im, n, out)) return -1;
    /* an odometer over the output's indices, the input's index moved with it (the masks of
     * a GPT are 512 x 512 a block: a division per axis and element was most of an import) */
    int64_t c[ARR_RANK] = {0}, idx = 0;
    for (int d = 0; d < out->rank; d++) idx += start[d] * (int64_t)ist[d];
    for (size_t o = 0; o < out->count; o++) {
        out->v[o] = in[0].v[idx];
        for (int d = out->rank - 1; d >= 0; d--) {
            if (++c[d] < out->dims[d]) {
                idx += step[d] * (int64_t)ist[d];
                break;
            }
            idx -= (c[d] - 1) * step[d] * (int64_t)ist[d];
            c[d] = 0;
        }
    }
    return 0;
}

/* Expand of constants */
static int fold_expand(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out, const size_t *ist)
{
    int64_t s[INTS_MAX];
    int ns = 0, sc;
    if (imp_input_ints(im, n, 1, s, &ns, &sc) != 0 || ns > ARR_RANK)
        return imp_fail(im, "node '%s' (Expand): the shape must be a constant of at most %d values", imp_node_name(n),
                        INTS_MAX);
    arr_t two[2] = {in[0], {.rank = ns}};
    for (int d = 0; d < ns; d++) {
        if (s[d] < 0 || s[d] > DIM_MAX)
            return imp_fail(im, "node '%s' (Expand): dimension %lld", imp_node_name(n), (long long)s[d]);
        two[1].dims[d] = s[d];
    }
    if (arr_bcast(im, n, two, 2, out)) return -1;
    out->is_float = in[0].is_float;
    out->table = in[0].table;
    size_t st[ARR_RANK];
    arr_strides(&in[0], out->rank, st);
    for (size_t o = 0; o < out->count; o++) out->v[o] = in[0].v[arr_at(o, out->dims, out->rank, st)];
    return 0;
}

/* Concat of constants */
static int fold_concat(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out, const size_t *ist)
{
    int64_t ax = imp_attr_int(n, "axis", 0);
    if (ax < 0) ax += in[0].rank;
    out->rank = in[0].rank;
    memcpy(out->dims, in[0].dims, sizeof out->dims);
    if (ax < 0 || ax >= out->rank)
        return imp_fail(im, "node '%s' (Concat): axis %lld of folded constants", imp_node_name(n),
                        (long long)imp_attr_int(n, "axis", 0));
    out->dims[ax] = 0;
    for (int i = 0; i < k; i++) {
        int same = in[i].rank == out->rank && (in[i].table == in[0].table ||
                                               (in[i].table && in[0].table && strcmp(in[i].table, in[0].table) == 0));
        for (int d = 0; same && d < out->rank; d++) same = d == ax || in[i].dims[d] == in[0].dims[d];
        if (!same)
            return imp_fail(im, "node '%s' (Concat): folded constants of other shapes (or parameters)",
                            imp_node_name(n));
        out->dims[ax] += in[i].dims[ax];
        out->is_float |= in[i].is_float;
    }
    if (arr_alloc(im, n, out)) return -1;
    size_t outer = 1, o = 0;
    for (int d = 0; d < ax; d++) outer *= (size_t)out->dims[d];
    for (size_t a = 0; a < outer; a++)
        for (int i = 0; i < k; i++) {
            const size_t run = outer ? in[i].count / outer : 0;
            memcpy(out->v + o, in[i].v + a * run, run * sizeof *out->v);
            o += run;
        }
    return 0;
}

/* ScatterND of constants */
static int fold_scatter_nd(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out, const size_t *ist)
{
    /* data with updates written at the indices (the last axis of indices: a prefix of
     * data's axes), in order */
    if (imp_attr(n, "reduction"))
        return imp_fail(im, "node '%s' (ScatterND): attribute 'reduction' is not supported", imp_node_name(n));
    const int q = in[1].rank, kk = q ? (int)in[1].dims[q - 1] : 0;
    int ok = q >= 1 && kk >= 1 && kk <= in[0].rank && in[2].rank == q - 1 + in[0].rank - kk;
    for (int d = 0; ok && d < q - 1; d++) ok = in[2].dims[d] == in[1].dims[d];
    for (int d = kk; ok && d < in[0].rank; d++) ok = in[2].dims[q - 1 + d - kk] == in[0].dims[d];
    if (!ok)
        return imp_fail(im, "node '%s' (ScatterND): indices and updates do not fit the data's shape", imp_node_name(n));
    out->rank = in[0].rank;
    memcpy(out->dims, in[0].dims, sizeof out->dims);
    if (arr_alloc(im, n, out)) return -1;
    memcpy(out->v, in[0].v, out->count * sizeof *out->v);
    const size_t slice = kk < in[0].rank ? ist[kk - 1] : 1, nidx = in[1].count / (size_t)kk;
    for (size_t i = 0; i < nidx; i++) {
        size_t off = 0;
        for (int d = 0; d < kk; d++) {
            int64_t e = 0;
            if (arr_int(im, n, &in[1], i * (size_t)kk + (size_t)d, -in[0].dims[d], in[0].dims[d] - 1, &e)) return -1;
            off += (size_t)(e < 0 ? e + in[0].dims[d] : e) * ist[d];
        }
        memcpy(out->v + off, in[2].v + i * slice, slice * sizeof *out->v);
    }
    return 0;
}

/* ConstantOfShape of constants */
static int fold_constant_of_shape(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out, const size_t *ist)
{
    if (in[0].rank > 1 || in[0].count > ARR_RANK)
        return imp_fail(im, "node '%s' (ConstantOfShape): a shape of at most %d values", imp_node_name(n), ARR_RANK);
    out->rank = (int)in[0].count;
    for (int d = 0; d < out->rank; d++)
        if (arr_int(im, n, &in[0], (size_t)d, 0, DIM_MAX, &out->dims[d])) return -1;
    arr_t val = {0};
    const Onnx__AttributeProto *at = imp_attr(n, "value");
    if (at && at->t && (arr_of_tensor(im, n, at->t, &val) || val.count != 1))
        return arr_free(&val), val.count != 1 ? imp_fail(im, "node '%s' (ConstantOfShape): value must hold one element",
                                                         imp_node_name(n))
                                              : -1;
    out->is_float = at && at->t ? val.is_float : 1;
    const double fill = val.v ? val.v[0] : 0.0;
    arr_free(&val);
    if (arr_alloc(im, n, out)) return -1;
    for (size_t o = 0; o < out->count; o++) out->v[o] = fill;
    out->table = NULL;
    return 0;
}

/* Range of constants */
static int fold_range(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out, const size_t *ist)
{
    if (in[0].count != 1 || in[1].count != 1 || in[2].count != 1 || in[2].v[0] == 0.0 || !isfinite(in[0].v[0]) ||
        !isfinite(in[1].v[0]) || !isfinite(in[2].v[0]))
        return imp_fail(im, "node '%s' (Range): start, limit and delta must be finite scalars, delta not 0",
                        imp_node_name(n));
    const double c = ceil((in[1].v[0] - in[0].v[0]) / in[2].v[0]);
    out->rank = 1;
    out->dims[0] = c > 0 ? (c > (double)DIM_MAX ? DIM_MAX + 1 : (int64_t)c) : 0;
    out->is_float = in[0].is_float || in[1].is_float || in[2].is_float;
    if (arr_alloc(im, n, out)) return -1;
    for (size_t o = 0; o < out->count; o++) out->v[o] = in[0].v[0] + (double)o * in[2].v[0];
    return 0;
}

static int fold_movement(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out)
{
    const char *op = n->op_type;
    memset(out, 0, sizeof *out);
    out->is_float = in[0].is_float;
    out->table = in[0].table;
    size_t ist[ARR_RANK];
    {
        size_t run = 1;
        for (int d = in[0].rank - 1; d >= 0; d--) ist[d] = run, run *= (size_t)in[0].dims[d];
    }
    /* the operators that move a tagged array (a parameter's flat indices) keep it tagged */
    static const struct {
        const char *op;
        int (*fold)(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out, const size_t *ist);
        int tagged;
    } rows[] = {
        {"Identity", fold_reshape, 1},     {"Reshape", fold_reshape, 1},
        {"Unsqueeze", fold_reshape, 1},    {"Squeeze", fold_reshape, 1},
        {"Flatten", fold_reshape, 1},      {"Transpose", fold_transpose, 1},
        {"Gather", fold_gather, 1},        {"Slice", fold_slice, 1},
        {"Expand", fold_expand, 1},        {"Concat", fold_concat, 1},
        {"ScatterND", fold_scatter_nd, 0}, {"ConstantOfShape", fold_constant_of_shape, 0},
        {"Range", fold_range, 0},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        if (strcmp(op, rows[r].op) != 0) continue;
        if (in[0].table && !rows[r].tagged)
            return imp_fail(im, "node '%s' (%s): of parameter '%s' is not supported", imp_node_name(n), op, in[0].table);
        return rows[r].fold(im, n, in, k, out, ist);
    }
    if (in[0].table)
        return imp_fail(im, "node '%s' (%s): of parameter '%s' is not supported", imp_node_name(n), op, in[0].table);
    /* Shape of a folded constant */
    out->rank = 1;
    out->dims[0] = in[0].rank;
    out->is_float = 0;
    if (arr_alloc(im, n, out)) return -1;
    for (int d = 0; d < in[0].rank; d++) out->v[d] = (double)in[0].dims[d];
    return 0;
}

/* Folds n when every input is a constant (is_constant) and its operator is one of the
 * above; 1 when not (the node is something else's). */
int fold_array(imp_t *im, const Onnx__NodeProto *n)
{
    static const char *const elementwise[] = {"Add", "Sub",   "Mul",  "Div", "Mod",  "Pow", "Equal",
                                              "Not", "Where", "Cast", "Neg", "Sqrt", NULL};
    static const char *const movement[] = {"Identity",  "Reshape",         "Unsqueeze", "Squeeze", "Flatten",
                                           "Transpose", "Gather",          "Slice",     "Expand",  "Concat",
                                           "ScatterND", "ConstantOfShape", "Range",     "Shape",   NULL};
    int kind = 0;
    for (const char *const *o = elementwise; *o; o++) kind |= strcmp(n->op_type, *o) == 0;
    for (const char *const *o = movement; *o; o++) kind |= (strcmp(n->op_type, *o) == 0) << 1;
    if (!kind || n->n_input < 1 || n->n_output < 1) return 1;
    /* the data inputs: the shape-like ones (Reshape's shape, Slice's bounds, Unsqueeze's
     * axes ...) are read by input_ints */
    const int data = kind == 1                           ? (int)n->n_input
                     : strcmp(n->op_type, "Concat") == 0 ? (int)n->n_input
                     : strcmp(n->op_type, "Gather") == 0 || strcmp(n->op_type, "Range") == 0 ||
                             strcmp(n->op_type, "ScatterND") == 0
                         ? (int)n->n_input
                         : 1;
    for (size_t i = 0; i < n->n_input; i++)
        if (n->input[i][0] && !is_constant(imp_find_value(im, n->input[i]))) return 1;
    /* Identity of an initializer stays its alias (a weight used under another name), and a
     * Transpose of a 2-D one is do_transpose's (a transposed weight for MatMul) */
    const value_t *v0 = imp_find_value(im, n->input[0]);
    if (v0 && strcmp(n->op_type, "Identity") == 0 && v0->kind == V_TENSOR) return 1;
    if (v0 && strcmp(n->op_type, "Transpose") == 0 && v0->kind == V_TENSOR && v0->tensor->n_dims == 2 &&
        !v0->constant_node && v0->tensor->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return 1;
    if (data > 3 && kind == 1)
        return imp_fail(im, "node '%s' (%s): %zu inputs", imp_node_name(n), n->op_type, n->n_input);
    arr_t in[ARR_RANK] = {{0}}, out = {0};
    const int nin = data > ARR_RANK ? -1 : data;
    if (nin < 0)
        return imp_fail(im, "node '%s' (%s): more than %d inputs are not folded", imp_node_name(n), n->op_type,
                        ARR_RANK);
    int rc = 0, got = 0;
    /* the bound counts what the values keep, not the inputs' working copies */
    const size_t kept = im->folded;
    /* a float initializer moved (not computed on) is a parameter: tagged */
    const int tag = kind == 2 && strcmp(n->op_type, "Shape") != 0;
    for (; got < nin && rc == 0; got++)
        rc = arr_in(im, n, (size_t)got, &in[got], tag && (got == 0 || strcmp(n->op_type, "Concat") == 0));
    if (rc == 0) rc = kind == 1 ? fold_elementwise(im, n, in, nin, &out) : fold_movement(im, n, in, nin, &out);
    for (int i = 0; i < got; i++) arr_free(&in[i]);
    if (rc == 0) {
        im->folded = kept + out.count;
        rc = define_array(im, n, 0, &out);
    }
    arr_free(&out);
    return rc;
}
