/* kernels/cpu/conv_amx.c - see conv_amx.h. */
#include "conv_amx.h"

#include <immintrin.h>
#include <string.h>

#include "bf16.h"
#include "cpu_isa.h"
#include "conv_amx_vectors.h"
#include "gemm_bf16_act.h"
#include "gemm_bf16_pack.h"
#include "im2col.h"
#include "prefetch.h"

typedef gemm_bf16_tilecfg_t tilecfg_t;

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* A row stride (in units of `unit` bytes) moved off multiples of 512 bytes, so that the
 * 16 rows of a tile load do not fall into the same few L1 sets. */
static size_t spread(size_t n, size_t unit) { return n * unit % 512 == 0 ? n + 64 / unit : n; }

void conv_amx_plan(conv_amx_geom_t *g)
{
    g->Cp = (int)round_up((size_t)g->C, 16);
    if (g->Cp > 16) g->Cp = (int)round_up((size_t)g->C, 32);
    g->kc = g->Cp % 32 == 0 ? 32 : 16;
    g->Mp = (int)round_up((size_t)g->M, 16);
    if (g->stride != 2) g->stride = 1;
    g->phase = g->stride == 2 ? (size_t)g->PH * g->PW : 0;
    const size_t cells = (size_t)g->rows * g->PW, plane = g->stride == 2 ? 4 * g->phase : (size_t)g->PH * g->PW;
    size_t reach = 0; /* the farthest tap (at stride 2 not always the last) */
    for (int t = 0; t < g->KH * g->KW; t++)
        if (conv_amx_tap(g, t) > reach) reach = conv_amx_tap(g, t);
    g->N = round_up(cells, 32);
    g->pld = spread(round_up(reach + g->N > plane ? reach + g->N : plane, 16), 4);
    g->ldy = spread(g->N, 4);
    g->Nk = round_up(cells, 32);
    g->L = spread(round_up(reach + g->Nk > plane ? reach + g->Nk : plane, 32), 2);
}

size_t conv_amx_weight_bytes(const conv_amx_geom_t *g) { return (size_t)g->Mp * g->KH * g->KW * g->Cp * 2; }
size_t conv_amx_source_bytes(const conv_amx_geom_t *g) { return (size_t)g->Cp / 2 * g->pld * 4; }
size_t conv_amx_grid_floats(const conv_amx_geom_t *g) { return (size_t)g->Mp * g->ldy; }

/* The weight gradient's scratch: dout's packed blocks (Mp x Nk bf16), the source's rounded
 * planes (Cp of L), dout rounded on the grid (M rows of Nk), the sums; each from a 64-byte
 * boundary of the scratch. */
static size_t wgrad_planes_at(const conv_amx_geom_t *g) { return round_up((size_t)g->Mp * g->Nk * 2, 64); }
static size_t wgrad_dout_at(const conv_amx_geom_t *g)
{
    return wgrad_planes_at(g) + round_up((size_t)g->Cp * g->L * 2, 64);
}
static size_t wgrad_sums_at(const conv_amx_geom_t *g)
{
    return wgrad_dout_at(g) + round_up((size_t)g->M * g->Nk * 2, 64);
}
size_t conv_amx_wgrad_bytes(const conv_amx_geom_t *g)
{
    return wgrad_sums_at(g) + (size_t)g->Cp * g->Mp * g->KH * g->KW * 4;
}

/* Which of a kernel's taps each of g's taps is: itself (flip 0), or at an input
 * gradient's phase (a, b) of stride s the flipped taps ky = a + s i, kx = b + s j, g's tap
 * (KH - 1 - i, KW - 1 - j) (flip 1; KW the kernel's) */
typedef struct {
    int flip, s, a, b, KW;
} tap_map_t;

static int kernel_tap(const tap_map_t *map, const conv_amx_geom_t *g, int t)
{
    if (!map->flip) return t;
    const int i = g->KH - 1 - t / g->KW, j = g->KW - 1 - t % g->KW;
    return (map->a + map->s * i) * map->KW + map->b + map->s * j;
}

/* wp = A tiles of g's taps: W_t[m][c] = w[m][c][tap] (w with kk taps a filter), or with
 * a flipped map w[c][m][tap] (w the forward's weight of an input gradient). */
static void pack_taps(const conv_amx_geom_t *g, const float *w, const tap_map_t *map, int kk, uint16_t *wp)
{
    const int KK = g->KH * g->KW, nch = g->Cp / g->kc;
    for (int mb = 0; mb < g->Mp / 16; mb++)
        for (int t = 0; t < KK; t++) {
            const int kt = kernel_tap(map, g, t);
            for (int ch = 0; ch < nch; ch++) {
                uint16_t *tile = wp + (((size_t)mb * KK + t) * nch + ch) * 16 * g->kc;
                for (int r = 0; r < 16; r++)
                    for (int k = 0; k < g->kc; k++) {
                        const int m = mb * 16 + r, c = ch * g->kc + k;
                        float v = 0.0f;
                        if (m < g->M && c < g->C)
                            v = map->flip ? w[((size_t)c * g->M + m) * kk + kt] : w[((size_t)m * g->C + c) * kk + kt];
                        tile[r * g->kc + k] = bf16_from_float(v);
                    }
            }
        }
}

void conv_amx_pack(const conv_amx_geom_t *g, const float *w, uint16_t *wp)
{
    const tap_map_t same = {0};
    pack_taps(g, w, &same, g->KH * g->KW, wp);
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* o[i] = the pair (a[i], b[i]) rounded, a in the low half; b NULL: zeros there */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
pair_row(int n, const float *restrict a, const float *restrict b, uint32_t *restrict o)
{
    if (!b) {
        for (int i = 0; i < n; i++) o[i] = bf16_round_bits(float_bits(a[i])) >> 16;
        return;
    }
    for (int i = 0; i < n; i++)
        o[i] = (bf16_round_bits(float_bits(a[i])) >> 16) | (bf16_round_bits(float_bits(b[i])) & 0xffff0000u);
}

/* n zero pairs at o: a loop, not memset (GCC would make it one call a row, for a value
 * or two) */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void zero_pairs(int n, uint32_t *o)
{
    for (int i = 0; i < n; i++) o[i] = 0;
}

/* Zeros in rows rows of o (ld apart): n values from each row's start. A loop, not memset
 * (GCC would make it one call a row): the pads are a value or two a row. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void zero_cols(int rows, size_t n, uint16_t *o,
                                                                                    size_t ld)
{
    for (int r = 0; r < rows; r++)
        for (size_t i = 0; i < n; i++) o[(size_t)r * ld + i] = 0;
}

/* Stride 2's phases: d0[k] = v[2k] and d1[k] = v[2k + 1], the n values of a row split
 * between its even and odd columns (d0 gets a last odd one); for the forward's channel
 * pairs (32 bits) and the weight gradient's values (16) */
#define SPLIT_ROW(name, T)                                                                                        \
    __attribute__((target_clones("avx512f", "avx2", "default"))) static void name(int n, const T *restrict v,     \
                                                                                  T *restrict d0, T *restrict d1) \
    {                                                                                                             \
        for (int k = 0; k < n / 2; k++) d0[k] = v[2 * k], d1[k] = v[2 * k + 1];                                   \
        if (n & 1) d0[n / 2] = v[n - 1];                                                                          \
    }
SPLIT_ROW(split_pairs, uint32_t)
SPLIT_ROW(split_values, uint16_t)
#undef SPLIT_ROW

/* Where source row sh's values from column sw on (sw even) go in a channel's phases: its
 * values sw, sw + 2, ... (d0) to the phase of the padded column of sw, the others (d1)
 * to the other phase of its padded row, each at the phase column of its first value */
static void phase_at(const conv_amx_geom_t *g, int sh, int sw, size_t *d0, size_t *d1)
{
    const int py = g->top + sh, px = g->left + sw;
    const size_t row = (size_t)(py & 1) * 2 * g->phase + (size_t)(py >> 1) * g->PW;
    const size_t even = row + (size_t)((px + 1) >> 1), odd = row + g->phase + (size_t)(px >> 1);
    *d0 = px & 1 ? odd : even;
    *d1 = px & 1 ? even : odd;
}

/* A source row is rounded a chunk of values at a time, then split (stride 2); even, so
 * that each chunk starts on the row's even values */
#define ROW_CHUNK 256

/* Row sh of channel pair cp's share of the next image's planes, asked for as this image's
 * are rounded (prefetch.h) */
static inline void source_ahead(const conv_amx_geom_t *g, const float *src, int cp, int sh)
{
    prefetch_next_share(src, (size_t)g->C * g->SH * g->SW * sizeof(float), (size_t)cp * g->SH + (size_t)sh,
                        (size_t)(g->C + 1) / 2 * g->SH);
}

/* conv_amx_source at stride 2: the pads (everything but the values) zeroed whole */
static void source_phases(const conv_amx_geom_t *g, const float *src, int pads, uint32_t *xs)
{
    const size_t SP = (size_t)g->SH * g->SW;
    uint32_t tmp[ROW_CHUNK];
    for (int cp = 0; cp < g->Cp / 2; cp++) {
        uint32_t *o = xs + (size_t)cp * g->pld;
        if (pads) memset(o, 0, g->pld * 4);
        const int c0 = 2 * cp, c1 = 2 * cp + 1;
        if (c0 >= g->C) continue;
        const float *a = src + (size_t)c0 * SP, *b = c1 < g->C ? src + (size_t)c1 * SP : NULL;
        for (int sh = 0; sh < g->SH; sh++) {
            source_ahead(g, src, cp, sh);
            for (int w0 = 0; w0 < g->SW; w0 += ROW_CHUNK) {
                const int n = g->SW - w0 < ROW_CHUNK ? g->SW - w0 : ROW_CHUNK;
                const size_t at = (size_t)sh * g->SW + (size_t)w0;
                size_t d0, d1;
                phase_at(g, sh, w0, &d0, &d1);
                pair_row(n, a + at, b ? b + at : NULL, tmp);
                split_pairs(n, tmp, o + d0, o + d1);
            }
        }
    }
}

void conv_amx_source(const conv_amx_geom_t *g, const float *src, int pads, uint32_t *xs)
{
    if (g->stride == 2) {
        source_phases(g, src, pads, xs);
        return;
    }
    const size_t SP = (size_t)g->SH * g->SW;
    const int right = g->PW - g->left - g->SW;
    for (int cp = 0; cp < g->Cp / 2; cp++) {
        uint32_t *o = xs + (size_t)cp * g->pld;
        const int c0 = 2 * cp, c1 = 2 * cp + 1;
        if (c0 >= g->C) {
            if (pads) memset(o, 0, g->pld * 4);
            continue;
        }
        const float *a = src + (size_t)c0 * SP, *b = c1 < g->C ? src + (size_t)c1 * SP : NULL;
        if (pads) {
            memset(o, 0, (size_t)g->top * g->PW * 4);
            memset(o + (size_t)(g->top + g->SH) * g->PW, 0, (g->pld - (size_t)(g->top + g->SH) * g->PW) * 4);
        }
        for (int sh = 0; sh < g->SH; sh++) {
            uint32_t *row = o + (size_t)(g->top + sh) * g->PW;
            source_ahead(g, src, cp, sh);
            if (pads) {
                zero_pairs(g->left, row);
                zero_pairs(right, row + g->left + g->SW);
            }
            pair_row(g->SW, a + (size_t)sh * g->SW, b ? b + (size_t)sh * g->SW : NULL, row + g->left);
        }
    }
}

/* The weight gradient's operands: the source's planes padded and rounded (Cp planes of L
 * values, zeros past the plane and past C), and dout rounded on the grid (M rows of Nk,
 * zeros in the garbage columns and past the grid) packed as gemm_bf16_pack.h packs a B
 * stored transposed: blocks of 16 position pairs x 16 output channels x 2, block (mb, kb)
 * at (mb * Nk/32 + kb) * 512, zeros past M. The tiles' and the vectors' paths pack with
 * gemm_bf16's AVX-512 packer, the twin with the loop below: the same bytes. All round as an
 * activation stored in bf16 is (gemm_bf16_act.h: on cpu_isa()'s path). */
static void wgrad_phases(const conv_amx_geom_t *g, const float *src, int pads, uint16_t *x16)
{
    const size_t SP = (size_t)g->SH * g->SW;
    const cpu_isa_t isa = cpu_isa();
    uint16_t tmp[ROW_CHUNK];
    for (int c = 0; c < g->Cp; c++) {
        uint16_t *o = x16 + (size_t)c * g->L;
        if (pads) memset(o, 0, g->L * 2);
        if (c >= g->C) continue;
        for (int sh = 0; sh < g->SH; sh++)
            for (int w0 = 0; w0 < g->SW; w0 += ROW_CHUNK) {
                const int n = g->SW - w0 < ROW_CHUNK ? g->SW - w0 : ROW_CHUNK;
                size_t d0, d1;
                phase_at(g, sh, w0, &d0, &d1);
                bf16_act_store_rows(isa, 1, (size_t)n, src + (size_t)c * SP + (size_t)sh * g->SW + (size_t)w0,
                                    (size_t)n, tmp, (size_t)n);
                split_values(n, tmp, o + d0, o + d1);
            }
    }
}

static void wgrad_source(const conv_amx_geom_t *g, const float *src, int pads, uint16_t *x16)
{
    if (g->stride == 2) {
        wgrad_phases(g, src, pads, x16);
        return;
    }
    const size_t SP = (size_t)g->SH * g->SW, right = (size_t)(g->PW - g->left - g->SW);
    const cpu_isa_t isa = cpu_isa();
    for (int c = 0; c < g->Cp; c++) {
        uint16_t *o = x16 + (size_t)c * g->L;
        if (c >= g->C) {
            if (pads) memset(o, 0, g->L * 2);
            continue;
        }
        uint16_t *rows = o + (size_t)g->top * g->PW;
        bf16_act_store_rows(isa, (size_t)g->SH, (size_t)g->SW, src + (size_t)c * SP, (size_t)g->SW, rows + g->left,
                            (size_t)g->PW);
        if (!pads) continue;
        memset(o, 0, (size_t)g->top * g->PW * 2);
        zero_cols(g->SH, (size_t)g->left, rows, (size_t)g->PW);
        zero_cols(g->SH, right, rows + g->left + g->SW, (size_t)g->PW);
        const size_t done = (size_t)(g->top + g->SH) * g->PW;
        memset(o + done, 0, (g->L - done) * 2);
    }
}

static void wgrad_dout(conv_amx_unit_t u, const conv_amx_geom_t *g, const float *dout, int pads, uint16_t *dg,
                       uint16_t *dvb)
{
    const size_t P = (size_t)g->rows * g->cols;
    const cpu_isa_t isa = cpu_isa();
    for (int m = 0; m < g->M; m++) {
        uint16_t *row = dg + (size_t)m * g->Nk;
        bf16_act_store_rows(isa, (size_t)g->rows, (size_t)g->cols, dout + (size_t)m * P, (size_t)g->cols, row,
                            (size_t)g->PW);
        if (!pads) continue;
        zero_cols(g->rows, (size_t)(g->PW - g->cols), row + g->cols, (size_t)g->PW);
        memset(row + (size_t)g->rows * g->PW, 0, (g->Nk - (size_t)g->rows * g->PW) * 2);
    }
    const int kbn = (int)(g->Nk / 32), mbn = g->Mp / 16;
    if (u != CONV_AMX_TWIN) {
        const gemm_bf16_packed_t p = {.nbn = mbn, .kbn = kbn, .b = dvb};
        gemm_bf16_pack_b16_cols((int)g->Nk, g->M, dg, (int)g->Nk, &p);
        return;
    }
    for (int mb = 0; mb < mbn; mb++)
        for (int kb = 0; kb < kbn; kb++) {
            uint16_t *t = dvb + ((size_t)mb * kbn + kb) * 512;
            for (int q = 0; q < 16; q++)
                for (int j = 0; j < 16; j++)
                    for (int h = 0; h < 2; h++) {
                        const int m = mb * 16 + j;
                        t[q * 32 + j * 2 + h] = m < g->M ? dg[(size_t)m * g->Nk + (size_t)kb * 32 + 2 * q + h] : 0;
                    }
        }
}

/* ---- the tile configurations -------------------------------------------------------- */

static void shape(tilecfg_t *cfg, int t, int rows, int colsb)
{
    cfg->rows[t] = (uint8_t)rows;
    cfg->colsb[t] = (uint16_t)colsb;
}

/* grid_loops': sums 16 x 16 floats; A 16 output channels x kc channels; B kc/2 channel
 * pairs x 16 positions */
static tilecfg_t grid_config(const conv_amx_geom_t *g)
{
    tilecfg_t cfg = {.palette = 1};
    for (int t = 0; t < 4; t++) shape(&cfg, t, 16, 64);
    shape(&cfg, 4, 16, g->kc * 2);
    shape(&cfg, 5, 16, g->kc * 2);
    shape(&cfg, 6, g->kc / 2, 64);
    shape(&cfg, 7, g->kc / 2, 64);
    return cfg;
}

/* wgrad_loops': every tile 16 rows of 64 bytes */
static tilecfg_t wgrad_config(void)
{
    tilecfg_t cfg = {.palette = 1};
    for (int t = 0; t < 7; t++) shape(&cfg, t, 16, 64);
    return cfg;
}

/* ---- the twin: the tile unit's operations in plain float32 --------------------------- */

typedef struct {
    tilecfg_t cfg;
    uint8_t tile[8][16 * 64];
} twin_t;

static void twin_load(twin_t *s, int t, const void *p, size_t stride)
{
    for (int r = 0; r < s->cfg.rows[t]; r++)
        memcpy(s->tile[t] + r * 64, (const uint8_t *)p + r * stride, s->cfg.colsb[t]);
}

static void twin_store(const twin_t *s, int t, void *p, size_t stride)
{
    for (int r = 0; r < s->cfg.rows[t]; r++) memcpy((uint8_t *)p + r * stride, s->tile[t] + r * 64, s->cfg.colsb[t]);
}

/* tdpbf16ps: c[m][n] += a[m][2k] b[k][n][0] + a[m][2k + 1] b[k][n][1] over the k pairs,
 * each product exact in float32, summed in k order */
static void twin_dp(twin_t *s, int c, int a, int b)
{
    const int M = s->cfg.rows[a], N = s->cfg.colsb[b] / 4, K2 = s->cfg.colsb[a] / 4;
    float acc[16 * 16];
    memcpy(acc, s->tile[c], sizeof acc);
    uint16_t A[16 * 32], B[16 * 32];
    memcpy(A, s->tile[a], sizeof A);
    memcpy(B, s->tile[b], sizeof B);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float v = acc[m * 16 + n];
            for (int k = 0; k < K2; k++) {
                v += bf16_to_float(A[m * 32 + 2 * k]) * bf16_to_float(B[k * 32 + 2 * n]);
                v += bf16_to_float(A[m * 32 + 2 * k + 1]) * bf16_to_float(B[k * 32 + 2 * n + 1]);
            }
            acc[m * 16 + n] = v;
        }
    memcpy(s->tile[c], acc, sizeof acc);
}

#define CA_FN(name) name##_twin
#define CA_TARGET
#define CA_PARAM twin_t *tw,
#define CA_ARG tw,
#define CA_CONFIG(cfg) (tw->cfg = *(cfg))
#define CA_RELEASE() ((void)0)
#define CA_ZERO(t) memset(tw->tile[t], 0, sizeof tw->tile[t])
#define CA_LOAD(t, p, s) twin_load(tw, t, p, s)
#define CA_DP(c, a, b) twin_dp(tw, c, a, b)
#define CA_STORE(t, p, s) twin_store(tw, t, p, s)
#include "conv_amx_loops.h"
#undef CA_FN
#undef CA_TARGET
#undef CA_PARAM
#undef CA_ARG
#undef CA_CONFIG
#undef CA_RELEASE
#undef CA_ZERO
#undef CA_LOAD
#undef CA_DP
#undef CA_STORE

/* ---- the tiles ------------------------------------------------------------------------ */

#define CA_FN(name) name##_tiles
#define CA_TARGET __attribute__((target("amx-tile,amx-bf16")))
#define CA_PARAM
#define CA_ARG
#define CA_CONFIG(cfg) _tile_loadconfig(cfg)
#define CA_RELEASE() _tile_release()
#define CA_ZERO(t) _tile_zero(t)
#define CA_LOAD(t, p, s) _tile_loadd(t, p, s)
#define CA_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#define CA_STORE(t, p, s) _tile_stored(t, p, s)
#include "conv_amx_loops.h"

void conv_amx_grid(conv_amx_unit_t u, const conv_amx_geom_t *g, const uint16_t *wp, const uint32_t *xs, float *y)
{
    if (u == CONV_AMX_VECTORS) {
        conv_amx_vectors_grid(g, wp, xs, y);
        return;
    }
    const tilecfg_t cfg = grid_config(g);
    if (u == CONV_AMX_TILES) {
        grid_loops_tiles(&cfg, g, wp, xs, y);
        return;
    }
    twin_t tw;
    grid_loops_twin(&tw, &cfg, g, wp, xs, y);
}

void conv_amx_wgrad(conv_amx_unit_t u, const conv_amx_geom_t *g, const float *src, const float *dout, int first,
                    void *ws)
{
    uint16_t *dvb = ws, *x16 = (uint16_t *)((uint8_t *)ws + wgrad_planes_at(g));
    uint16_t *dg = (uint16_t *)((uint8_t *)ws + wgrad_dout_at(g));
    float *acc = (float *)((uint8_t *)ws + wgrad_sums_at(g));
    wgrad_source(g, src, first, x16);
    wgrad_dout(u, g, dout, first, dg, dvb);
    if (u == CONV_AMX_VECTORS) {
        conv_amx_vectors_wgrad(g, dvb, x16, acc, first);
        return;
    }
    const tilecfg_t cfg = wgrad_config();
    if (u == CONV_AMX_TILES) {
        wgrad_loops_tiles(&cfg, g, dvb, x16, acc, first);
        return;
    }
    twin_t tw;
    wgrad_loops_twin(&tw, &cfg, g, dvb, x16, acc, first);
}

void conv_amx_wgrad_store(const conv_amx_geom_t *g, const void *ws, float *dw)
{
    const float *acc = (const float *)((const uint8_t *)ws + wgrad_sums_at(g));
    const int KK = g->KH * g->KW, mbn = g->Mp / 16;
    for (int m = 0; m < g->M; m++)
        for (int c = 0; c < g->C; c++)
            for (int t = 0; t < KK; t++)
                dw[((size_t)m * g->C + c) * KK + t] =
                    acc[(((size_t)(c / 16) * mbn + m / 16) * KK + t) * 256 + (c % 16) * 16 + m % 16];
}

/* ---- the input gradient, a phase at a time ----------------------------------------- */

/* One side of phase a at stride s: the kernel's taps k = a + s i (n of them), and the
 * input positions x = s u + a - pad inside [0, in) (count of them, from u = u0) */
typedef struct {
    int n, u0, count;
} phase_side_t;

static phase_side_t phase_side(int a, int s, int K, int pad, int in)
{
    phase_side_t x = {.n = (K - a + s - 1) / s, .u0 = pad > a ? (pad - a + s - 1) / s : 0};
    const int last = in - 1 + pad - a; /* s u of the phase's last position */
    x.count = last < 0 ? 0 : last / s - x.u0 + 1;
    if (x.count < 0) x.count = 0;
    return x;
}

/* Grid cell (r, c) of phase (a, b) is input position (s (u0 + r) + a - pad, ...), whose
 * gradient sums dout[u - i][v - j] w[a + s i][b + s j]: on dout padded by top rows and left
 * columns, flipped tap (n - 1 - i) reads u0 + r - (n - 1) + (n - 1 - i) + top, so the
 * phase's grid starts at row u0 - (n - 1) + top, and padding above (left) is the largest
 * (n - 1) - u0, none below zero. */
void conv_amx_dinp_plan(const conv_amx_geom_t *f, conv_amx_dinp_t *p)
{
    memset(p, 0, sizeof *p);
    const int s = f->stride == 2 ? 2 : 1;
    p->s = s, p->H = f->SH, p->W = f->SW, p->KH = f->KH, p->KW = f->KW;
    phase_side_t ys[2], xs[2];
    int top = 0, left = 0;
    for (int a = 0; a < s; a++) {
        ys[a] = phase_side(a, s, f->KH, f->top, f->SH);
        xs[a] = phase_side(a, s, f->KW, f->left, f->SW);
        if (ys[a].n - 1 - ys[a].u0 > top) top = ys[a].n - 1 - ys[a].u0;
        if (xs[a].n - 1 - xs[a].u0 > left) left = xs[a].n - 1 - xs[a].u0;
    }
    int DH = top + f->rows, DW = left + f->cols; /* dout, then every phase's reads */
    for (int a = 0; a < s; a++) {
        if (ys[a].count && top + ys[a].u0 + ys[a].count > DH) DH = top + ys[a].u0 + ys[a].count;
        if (xs[a].count && left + xs[a].u0 + xs[a].count > DW) DW = left + xs[a].u0 + xs[a].count;
    }
    size_t pld = 0, wat = 0;
    for (int a = 0; a < s; a++)
        for (int b = 0; b < s; b++) {
            const int i = a * s + b;
            conv_amx_geom_t *g = &p->ph[i];
            *g = (conv_amx_geom_t){.C = f->M,
                                   .M = f->C,
                                   .KH = ys[a].n,
                                   .KW = xs[b].n,
                                   .stride = 1,
                                   .SH = f->rows,
                                   .SW = f->cols,
                                   .PH = DH,
                                   .PW = DW,
                                   .top = top,
                                   .left = left,
                                   .rows = ys[a].count,
                                   .cols = xs[b].count};
            conv_amx_plan(g);
            p->at[i] = (size_t)(ys[a].u0 - (ys[a].n - 1) + top) * DW + (size_t)(xs[b].u0 - (xs[b].n - 1) + left);
            p->row0[i] = s * ys[a].u0 + a - f->top;
            p->col0[i] = s * xs[b].u0 + b - f->left;
            p->wat[i] = wat;
            wat += round_up(conv_amx_weight_bytes(g) / 2, 32);
            if (p->at[i] + g->pld > pld) pld = p->at[i] + g->pld;
        }
    pld = spread(round_up(pld, 16), 4);
    for (int i = 0; i < s * s; i++) p->ph[i].pld = pld;
}

static size_t dinp_source_at(const conv_amx_dinp_t *p)
{
    const int last = p->s * p->s - 1;
    return round_up((p->wat[last] * 2 + conv_amx_weight_bytes(&p->ph[last])), 64);
}

static size_t dinp_grid_at(const conv_amx_dinp_t *p)
{
    return dinp_source_at(p) + round_up(conv_amx_source_bytes(&p->ph[0]), 64);
}

/* Floats of the largest phase's grid, rounded to 64 bytes */
static size_t dinp_grid_floats(const conv_amx_dinp_t *p)
{
    size_t grid = 0;
    for (int i = 0; i < p->s * p->s; i++)
        if (conv_amx_grid_floats(&p->ph[i]) > grid) grid = conv_amx_grid_floats(&p->ph[i]);
    return round_up(grid, 16);
}

/* The source, then one grid (stride 1) or two (stride 2: a row's two phases) */
size_t conv_amx_dinp_bytes(const conv_amx_dinp_t *p)
{
    return dinp_grid_at(p) + dinp_grid_floats(p) * 4 * (size_t)(p->s == 2 ? 2 : 1);
}

void conv_amx_dinp_pack(const conv_amx_dinp_t *p, const float *w, void *ws)
{
    const int s = p->s;
    for (int i = 0; i < s * s; i++) {
        const tap_map_t map = {.flip = 1, .s = s, .a = i / s, .b = i % s, .KW = p->KW};
        pack_taps(&p->ph[i], w, &map, p->KH * p->KW, (uint16_t *)ws + p->wat[i]);
    }
}

/* Stride 2: the rows of two phases of the same rows (even columns from ye, odd ones from
 * yo; their first cells are dx's columns 0 and 1) interleaved into dx's rows, every other
 * one from row0, or added to them: whole rows written at once (each phase alone had
 * written every other value: 2.2% of the samples of perf record -e cpu-clock
 * layer_profile --precision bf16 --batch 128 --steps 20 resnet20) */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
interleave_2(const conv_amx_geom_t *ge, const conv_amx_geom_t *go, const float *restrict ye, const float *restrict yo,
             int row0, int H, int W, int accumulate, float *restrict dx)
{
    const int n = go->cols, tail = ge->cols > n; /* W = 2n or 2n + 1 */
    for (int m = 0; m < ge->M; m++)
        for (int r = 0; r < ge->rows; r++) {
            const float *e = ye + (size_t)m * ge->ldy + (size_t)r * ge->PW;
            const float *od = yo + (size_t)m * go->ldy + (size_t)r * go->PW;
            float *o = dx + ((size_t)m * H + (size_t)(row0 + 2 * r)) * W;
            if (accumulate) {
                for (int c = 0; c < n; c++) o[2 * c] += e[c], o[2 * c + 1] += od[c];
                if (tail) o[2 * n] += e[n];
            } else {
                for (int c = 0; c < n; c++) o[2 * c] = e[c], o[2 * c + 1] = od[c];
                if (tail) o[2 * n] = e[n];
            }
        }
}

void conv_amx_dinp_image(conv_amx_unit_t u, const conv_amx_dinp_t *p, void *ws, const float *dout, int accumulate,
                         int pads, float *dx)
{
    const uint16_t *wp = ws;
    uint32_t *xs = (uint32_t *)((uint8_t *)ws + dinp_source_at(p));
    float *y = (float *)((uint8_t *)ws + dinp_grid_at(p)), *y1 = y + dinp_grid_floats(p);
    conv_amx_source(&p->ph[0], dout, pads, xs); /* every phase's source: ph[0] describes it */
    if (p->s == 1) {
        const conv_amx_geom_t *g = &p->ph[0];
        conv_amx_grid(u, g, wp, xs, y);
        conv_grid_to_planes(g->M, g->rows, g->cols, g->PW, y, g->ldy, NULL, accumulate, dx);
        return;
    }
    for (int a = 0; a < 2; a++) {
        const int i = 2 * a, even = p->col0[i] == 0 ? i : i + 1; /* the phase of dx's even columns */
        const conv_amx_geom_t *ge = &p->ph[even], *go = &p->ph[even ^ 1];
        if (!ge->rows || !ge->cols) continue; /* an input too small to have these rows */
        conv_amx_grid(u, ge, wp + p->wat[even], xs + p->at[even], y);
        if (go->cols) conv_amx_grid(u, go, wp + p->wat[even ^ 1], xs + p->at[even ^ 1], y1);
        interleave_2(ge, go, y, y1, p->row0[i], p->H, p->W, accumulate, dx);
    }
}

static int twin_forced;
void conv_amx_force_twin(int on) { twin_forced = on != 0; }
int conv_amx_twin_forced(void) { return twin_forced; }
