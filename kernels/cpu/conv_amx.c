/* kernels/cpu/conv_amx.c - see conv_amx.h. */
#include "conv_amx.h"

#include <immintrin.h>
#include <string.h>

#include "bf16.h"
#include "cpu_isa.h"
#include "conv_amx_vectors.h"
#include "gemm_bf16_act.h"
#include "gemm_bf16_pack.h"

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
    const size_t cells = (size_t)g->rows * g->PW, plane = (size_t)g->PH * g->PW;
    const size_t reach = (size_t)(g->KH - 1) * g->PW + (size_t)(g->KW - 1);
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

void conv_amx_pack(const conv_amx_geom_t *g, const float *w, int flipped, uint16_t *wp)
{
    const int KK = g->KH * g->KW, nch = g->Cp / g->kc;
    for (int mb = 0; mb < g->Mp / 16; mb++)
        for (int t = 0; t < KK; t++)
            for (int ch = 0; ch < nch; ch++) {
                uint16_t *tile = wp + (((size_t)mb * KK + t) * nch + ch) * 16 * g->kc;
                for (int r = 0; r < 16; r++)
                    for (int k = 0; k < g->kc; k++) {
                        const int m = mb * 16 + r, c = ch * g->kc + k;
                        float v = 0.0f;
                        if (m < g->M && c < g->C)
                            v = flipped ? w[((size_t)c * g->M + m) * KK + (KK - 1 - t)]
                                        : w[((size_t)m * g->C + c) * KK + t];
                        tile[r * g->kc + k] = bf16_from_float(v);
                    }
            }
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

void conv_amx_source(const conv_amx_geom_t *g, const float *src, int pads, uint32_t *xs)
{
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
static void wgrad_source(const conv_amx_geom_t *g, const float *src, int pads, uint16_t *x16)
{
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

static int twin_forced;
void conv_amx_force_twin(int on) { twin_forced = on != 0; }
int conv_amx_twin_forced(void) { return twin_forced; }
