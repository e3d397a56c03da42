/* kernels/cpu/view.c - the strided views of Transpose, Slice and Expand and the
 * broadcasting binary operators (Add, Sub, Mul, Div) by rows (ops.h's view_rows_* and
 * binary_rows_*): the same walks as elementwise.c's view_forward, view_backward,
 * binary_forward and binary_backward, element for element in the same order, but with the
 * per-element carry of those walks (bcast_next) replaced by a plain loop over the innermost
 * axis, after merging the axes that are contiguous with each other. A ViT's head split (a
 * (T, heads, D) tensor read as (heads, T, D)), its attention scale (q / sqrt(D)), ConvNeXt's
 * NCHW <-> NHWC permutes and its layer scale are then loops over runs of 16 to 200k floats
 * instead of one carry test per float (the copy runs at memory speed). */
#include <stddef.h>

/* The binary rows' selects and divisions are followed by arithmetic gcc would otherwise
 * keep scalar (elementwise.c's reason; nothing here reads the exception flags). Before the
 * includes: scalar_fn.h's functions must share the option to be inlined. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "bf16.h"
#include "ops.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "tr8_avx2.h"
#define VIEW_X86 1
#endif

/* A walk in output order: n[0] the outermost axis, s and s2 the two inputs' strides along
 * each (in floats, negative for a Slice walking down; s2 0 for a view), after merging. */
typedef struct {
    int rank;
    long n[BCAST_MAX_AXES];
    ptrdiff_t s[BCAST_MAX_AXES], s2[BCAST_MAX_AXES];
} rows_t;

/* The descriptor at batch B (sb read only with two) with adjacent axes merged where the
 * outer one's strides are the inner one's times its size (the pair is then one axis of
 * their product; the output is contiguous, so that holds for it too); axes of size 1 are
 * dropped. At least one axis remains. */
static void rows_setup(const bcast_desc_t *d, int B, int two, rows_t *r)
{
    r->rank = 0;
    for (int ax = 0; ax < d->rank; ax++) {
        const long n = ax ? d->dims[ax] : B;
        const ptrdiff_t s = (ptrdiff_t)d->sa[ax], s2 = two ? (ptrdiff_t)d->sb[ax] : 0;
        if (n == 1) continue;
        const int k = r->rank - 1;
        if (k >= 0 && r->s[k] == s * n && r->s2[k] == s2 * n) {
            /* the previous (outer) axis continues this one: one axis */
            r->n[k] *= n;
            r->s[k] = s;
            r->s2[k] = s2;
            continue;
        }
        r->n[r->rank] = n;
        r->s[r->rank] = s;
        r->s2[r->rank++] = s2;
    }
    if (r->rank == 0) {
        r->n[0] = 1;
        r->s[0] = r->s2[0] = 0;
        r->rank = 1;
    }
}

/* The rows in output order: a row is n[rank - 1] outputs, s[rank - 1] (s2[rank - 1])
 * apart in the input(s); rows_next moves *ia and *ib from one row's first inputs to the
 * next row's (idx: the outer axes' counters, zeroed by the caller) and returns 0 after the
 * last row. */
static int rows_next(const rows_t *r, long *idx, ptrdiff_t *ia, ptrdiff_t *ib)
{
    for (int ax = r->rank - 2; ax >= 0; ax--) {
        *ia += r->s[ax];
        *ib += r->s2[ax];
        if (++idx[ax] < r->n[ax]) return 1;
        *ia -= r->s[ax] * (ptrdiff_t)r->n[ax];
        *ib -= r->s2[ax] * (ptrdiff_t)r->n[ax];
        idx[ax] = 0;
    }
    return 0;
}

/* ---- transposed panels ------------------------------------------------------------------
 * A walk whose innermost axis reads the input st > 1 apart while the next axis out reads it
 * contiguously (a Transpose of the last two axes: the ViT's K^T, (65, 16) per head read as
 * (16, 65), its patch tokens, ConvNeXt's NCHW <-> NHWC permutes) copies, per panel of R
 * such rows of L, y (R, L) = the transpose of x (L rows st apart, R contiguous). Row by row
 * that is a gather of one float per load; in 8x8 tiles of AVX2 shuffles it is eight loads
 * and eight stores of eight floats. st >= R: a panel reads each input once (no Expand), so
 * the backward's additions are one per input in a panel and the panels go in output
 * order: the bits of the walk by rows. */
#ifdef VIEW_X86
#define VIEW_TARGET __attribute__((target("avx2")))

/* y (R, L) = x^T, x's L rows st apart */
VIEW_TARGET static void panel_forward(const float *x, ptrdiff_t st, long R, long L, float *y)
{
    const long R8 = R / 8 * 8, L8 = L / 8 * 8;
    for (long i = 0; i < R8; i += 8) {
        for (long j = 0; j < L8; j += 8) {
            __m256 r[8];
            for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps(x + (j + k) * st + i);
            avx2_tr8(r);
            for (int k = 0; k < 8; k++) _mm256_storeu_ps(y + (i + k) * L + j, r[k]);
        }
        for (long k = i; k < i + 8; k++)
            for (long j = L8; j < L; j++) y[k * L + j] = x[j * st + k];
    }
    for (long k = R8; k < R; k++)
        for (long j = 0; j < L; j++) y[k * L + j] = x[j * st + k];
}

/* x (L rows st apart, R contiguous) = or += g^T, g (R, L); set writes g + 0.0f */
VIEW_TARGET static void panel_backward(const float *g, long R, long L, float *x, ptrdiff_t st, int set)
{
    const long R8 = R / 8 * 8, L8 = L / 8 * 8;
    const __m256 zero = _mm256_setzero_ps();
    for (long i = 0; i < R8; i += 8) {
        for (long j = 0; j < L8; j += 8) {
            __m256 r[8];
            for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps(g + (i + k) * L + j);
            avx2_tr8(r);
            for (int k = 0; k < 8; k++) {
                float *d = x + (j + k) * st + i;
                _mm256_storeu_ps(d, _mm256_add_ps(set ? zero : _mm256_loadu_ps(d), r[k]));
            }
        }
        for (long k = i; k < i + 8; k++)
            for (long j = L8; j < L; j++) x[j * st + k] = (set ? 0.0f : x[j * st + k]) + g[k * L + j];
    }
    for (long k = R8; k < R; k++)
        for (long j = 0; j < L; j++) x[j * st + k] = (set ? 0.0f : x[j * st + k]) + g[k * L + j];
}

/* Whether walk r is one of transposed panels (on a CPU with AVX2), and then p the walk over
 * the panels: r without its second innermost axis. */
static int panels(const rows_t *r, rows_t *p)
{
    const int k = r->rank - 2;
    if (k < 0 || r->s[k] != 1 || r->s[k + 1] < (ptrdiff_t)r->n[k] || !__builtin_cpu_supports("avx2")) return 0;
    *p = *r;
    p->rank = r->rank - 1;
    p->n[k] = r->n[k + 1];
    p->s[k] = r->s[k + 1];
    return 1;
}
#endif

/* view_rows_forward of inp, or of inp16's bf16 values widened (exact) where inp is NULL */
static void rows_forward(const bcast_desc_t *d, size_t off, int B, const float *inp, const uint16_t *inp16, float *out)
{
    rows_t r;
    if (B <= 0) return;
    rows_setup(d, B, 0, &r);
    const long len = r.n[r.rank - 1];
    const ptrdiff_t st = r.s[r.rank - 1];
    long idx[BCAST_MAX_AXES] = {0};
    ptrdiff_t ia = (ptrdiff_t)off, ib = 0;
#ifdef VIEW_X86
    rows_t p;
    if (inp && panels(&r, &p)) {
        const long R = r.n[r.rank - 2];
        for (float *y = out;; y += R * len) {
            panel_forward(inp + ia, st, R, len, y);
            if (!rows_next(&p, idx, &ia, &ib)) return;
        }
    }
#endif
    for (float *y = out;; y += len) {
        if (!inp)
            for (long j = 0; j < len; j++) y[j] = bf16_to_float(inp16[ia + j * st]);
        else if (st == 1)
            for (long j = 0; j < len; j++) y[j] = inp[ia + j];
        else
            for (long j = 0; j < len; j++) y[j] = inp[ia + j * st];
        if (!rows_next(&r, idx, &ia, &ib)) return;
    }
}

void view_rows_forward(const bcast_desc_t *d, size_t off, int B, const float *inp, float *out)
{
    rows_forward(d, off, B, inp, NULL, out);
}

void view_rows_forward16(const bcast_desc_t *d, size_t off, int B, const uint16_t *inp, float *out)
{
    rows_forward(d, off, B, NULL, inp, out);
}

/* set: dinp = dout + 0.0f instead of += (what += gives into zeros, bit for bit: +0 for -0);
 * the caller guarantees a view that reads every input once */
static void rows_backward(const bcast_desc_t *d, size_t off, int B, const float *dout, float *dinp, int set)
{
    rows_t r;
    if (!dinp || B <= 0) return;
    rows_setup(d, B, 0, &r);
    const long len = r.n[r.rank - 1];
    const ptrdiff_t st = r.s[r.rank - 1];
    long idx[BCAST_MAX_AXES] = {0};
    ptrdiff_t ia = (ptrdiff_t)off, ib = 0;
#ifdef VIEW_X86
    rows_t p;
    if (panels(&r, &p)) {
        const long R = r.n[r.rank - 2];
        for (const float *g = dout;; g += R * len) {
            panel_backward(g, R, len, dinp + ia, st, set);
            if (!rows_next(&p, idx, &ia, &ib)) return;
        }
    }
#endif
    for (const float *g = dout;; g += len) {
        float *x = dinp + ia;
        if (set && st == 1)
            for (long j = 0; j < len; j++) x[j] = g[j] + 0.0f;
        else if (set)
            for (long j = 0; j < len; j++) x[j * st] = g[j] + 0.0f;
        else if (st == 1)
            for (long j = 0; j < len; j++) x[j] += g[j];
        else
            for (long j = 0; j < len; j++) x[j * st] += g[j];
        if (!rows_next(&r, idx, &ia, &ib)) return;
    }
}

void view_rows_backward(const bcast_desc_t *d, size_t off, int B, const float *dout, float *dinp)
{
    rows_backward(d, off, B, dout, dinp, 0);
}

void view_rows_backward_set(const bcast_desc_t *d, size_t off, int B, const float *dout, float *dinp)
{
    rows_backward(d, off, B, dout, dinp, 1);
}

/* ---- the broadcasting binary operators by rows ---------------------------------------------
 * In a row the inputs' strides are 0 (the input broadcasts along it: a scalar for the row)
 * or 1 (a contiguous run) in every network seen, and those are the loops below, the operator
 * a constant in each (the switch outside) so that gcc vectorises them; any other stride
 * takes a plain strided loop. */

/* the operator's case OP of a switch over op running STMT, in which OP is a constant */
#define BIN_SWITCH(op, STMT)                  \
    switch (op) {                             \
    case BINARY_ADD: STMT(BINARY_ADD); break; \
    case BINARY_SUB: STMT(BINARY_SUB); break; \
    case BINARY_MUL: STMT(BINARY_MUL); break; \
    default: STMT(BINARY_DIV); break;         \
    }

/* y[j] = a[j sa] op b[j sb], j < n; a0, b0: the scalars of a stride-0 input */
#define BIN_ROW_FWD(OP)                                                              \
    do {                                                                             \
        if (sa == 1 && sb == 1)                                                      \
            for (long j = 0; j < n; j++) y[j] = binary_fn(OP, a[j], b[j]);           \
        else if (sa == 1 && sb == 0)                                                 \
            for (long j = 0; j < n; j++) y[j] = binary_fn(OP, a[j], b0);             \
        else if (sa == 0 && sb == 1)                                                 \
            for (long j = 0; j < n; j++) y[j] = binary_fn(OP, a0, b[j]);             \
        else                                                                         \
            for (long j = 0; j < n; j++) y[j] = binary_fn(OP, a[j * sa], b[j * sb]); \
    } while (0)

__attribute__((target_clones("avx2", "default"))) static void
bin_row_fwd(binary_op_t op, long n, const float *a, ptrdiff_t sa, const float *b, ptrdiff_t sb, float *y)
{
    const float a0 = a[0], b0 = b[0];
    BIN_SWITCH(op, BIN_ROW_FWD)
}

/* One input's gradient over a row, TERM(j) its term at output j: written (set: + 0.0f, the
 * bits of adding into zeros) or added along a contiguous run, or, along a stride of 0,
 * summed in order into one float that starts from the gradient (or from 0 where set): the
 * same roundings as adding each term into memory in turn. */
#define GRAD_ROW(d, s, set, TERM)                                 \
    do {                                                          \
        if ((s) == 1 && (set))                                    \
            for (long j = 0; j < n; j++) (d)[j] = TERM(j) + 0.0f; \
        else if ((s) == 1)                                        \
            for (long j = 0; j < n; j++) (d)[j] += TERM(j);       \
        else {                                                    \
            float acc_ = (set) ? 0.0f : (d)[0];                   \
            for (long j = 0; j < n; j++) acc_ += TERM(j);         \
            (d)[0] = acc_;                                        \
        }                                                         \
    } while (0)

/* the two inputs' values at output j along the row: contiguous (1) or a scalar (0) */
#define AT_A1(j) a[j]
#define AT_A0(j) a0
#define AT_B1(j) b[j]
#define AT_B0(j) b0

#define DA_TERM_B1(j) binary_grad_x(OP_, g[j], AT_B1(j))
#define DA_TERM_B0(j) binary_grad_x(OP_, g[j], AT_B0(j))
#define DB_TERM_A1B1(j) binary_grad_y(OP_, g[j], AT_A1(j), AT_B1(j))
#define DB_TERM_A0B1(j) binary_grad_y(OP_, g[j], AT_A0(j), AT_B1(j))
#define DB_TERM_A1B0(j) binary_grad_y(OP_, g[j], AT_A1(j), AT_B0(j))
#define DB_TERM_A0B0(j) binary_grad_y(OP_, g[j], AT_A0(j), AT_B0(j))

/* both gradients of a row whose strides are 0 or 1, the operator OP_ */
#define BIN_ROW_BWD(OP)                                                      \
    do {                                                                     \
        const binary_op_t OP_ = OP;                                          \
        if (da && sb == 1) GRAD_ROW(da, sa, set_a, DA_TERM_B1);              \
        else if (da) GRAD_ROW(da, sa, set_a, DA_TERM_B0);                    \
        if (db && sa == 1 && sb == 1) GRAD_ROW(db, sb, set_b, DB_TERM_A1B1); \
        else if (db && sb == 1) GRAD_ROW(db, sb, set_b, DB_TERM_A0B1);       \
        else if (db && sa == 1) GRAD_ROW(db, sb, set_b, DB_TERM_A1B0);       \
        else if (db) GRAD_ROW(db, sb, set_b, DB_TERM_A0B0);                  \
    } while (0)

/* A row's gradients; da and db distinct (each element's terms in the walk's order: the
 * two gradients' loops may follow one another), the strides 0 or 1. */
__attribute__((target_clones("avx2", "default"))) static void bin_row_bwd(binary_op_t op, long n, const float *a,
                                                                          ptrdiff_t sa, const float *b, ptrdiff_t sb,
                                                                          const float *g, float *da, int set_a,
                                                                          float *db, int set_b)
{
    const float a0 = a[0], b0 = b[0];
    BIN_SWITCH(op, BIN_ROW_BWD)
}

/* The walk's own order, one element at a time: any strides, and da == db (Mul(x, x): each
 * element's two terms in turn, as binary_backward adds them). */
static void bin_row_bwd_any(binary_op_t op, long n, const float *a, ptrdiff_t sa, const float *b, ptrdiff_t sb,
                            const float *g, float *da, int set_a, float *db, int set_b)
{
    for (long j = 0; j < n; j++) {
        const float x = a[j * sa], y = b[j * sb];
        if (da) da[j * sa] = (set_a ? 0.0f : da[j * sa]) + binary_grad_x(op, g[j], y);
        if (db) db[j * sb] = (set_b ? 0.0f : db[j * sb]) + binary_grad_y(op, g[j], x, y);
    }
}

void binary_rows_forward(binary_op_t op, const bcast_desc_t *d, int B, const float *a, const float *b, float *out)
{
    rows_t r;
    if (B <= 0) return;
    rows_setup(d, B, 1, &r);
    const long len = r.n[r.rank - 1];
    const ptrdiff_t sa = r.s[r.rank - 1], sb = r.s2[r.rank - 1];
    long idx[BCAST_MAX_AXES] = {0};
    ptrdiff_t ia = 0, ib = 0;
    for (float *y = out;; y += len) {
        bin_row_fwd(op, len, a + ia, sa, b + ib, sb, y);
        if (!rows_next(&r, idx, &ia, &ib)) return;
    }
}

void binary_rows_backward(binary_op_t op, const bcast_desc_t *d, int B, const float *a, const float *b,
                          const float *dout, float *da, int set_a, float *db, int set_b)
{
    rows_t r;
    if (B <= 0 || (!da && !db)) return;
    rows_setup(d, B, 1, &r);
    const long len = r.n[r.rank - 1];
    const ptrdiff_t sa = r.s[r.rank - 1], sb = r.s2[r.rank - 1];
    const int fast = da != db && (sa == 0 || sa == 1) && (sb == 0 || sb == 1);
    long idx[BCAST_MAX_AXES] = {0};
    ptrdiff_t ia = 0, ib = 0;
    for (const float *g = dout;; g += len) {
        (fast ? bin_row_bwd : bin_row_bwd_any)(op, len, a + ia, sa, b + ib, sb, g, da ? da + ia : NULL, set_a,
                                               db ? db + ib : NULL, set_b);
        if (!rows_next(&r, idx, &ia, &ib)) return;
    }
}
