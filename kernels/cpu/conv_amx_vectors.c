/* kernels/cpu/conv_amx_vectors.c - see conv_amx_vectors.h. */
#include "conv_amx_vectors.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#define VEC __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define INLINE __attribute__((always_inline)) static inline

/* the bf16 pair at p (two values, any 2-byte alignment) on every 32-bit lane */
VEC INLINE __m512bh pair_at(const uint16_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return (__m512bh)_mm512_set1_epi32(v);
}


/* ---- the convolution on the grid ---------------------------------------------------------- */

/* Rows a (8 output channels, g->kc apart in each A tile, the first tile's) by 32 positions
 * (16 unless two) from b (the first chunk's first pair-plane at the block's first
 * position): through every tap and chunk of channels, each pair of channels a step;
 * written to y (8 rows ldy apart). two is a constant at each call. */
VEC INLINE void grid_8(const conv_amx_geom_t *g, const uint16_t *a, const uint32_t *b, float *y, int two)
{
    const int KK = g->KH * g->KW, nch = g->Cp / g->kc, kc = g->kc;
    const size_t atile = (size_t)16 * kc, chunk = (size_t)(kc / 2) * g->pld, pld = g->pld;
    __m512 s0[8], s1[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) s0[r] = s1[r] = _mm512_setzero_ps();
    for (int t = 0; t < KK; t++) {
        const size_t off = conv_amx_tap(g, t);
        for (int ch = 0; ch < nch; ch++) {
            const uint16_t *at = a + ((size_t)t * nch + ch) * atile;
            const uint32_t *bt = b + (size_t)ch * chunk + off;
            for (int q = 0; q < kc / 2; q++) {
                const __m512bh v0 = (__m512bh)_mm512_loadu_si512(bt + q * pld);
                const __m512bh v1 = two ? (__m512bh)_mm512_loadu_si512(bt + q * pld + 16) : v0;
#pragma GCC unroll 8
                for (int r = 0; r < 8; r++) {
                    const __m512bh av = pair_at(at + (size_t)r * kc + 2 * q);
                    s0[r] = _mm512_dpbf16_ps(s0[r], av, v0);
                    if (two) s1[r] = _mm512_dpbf16_ps(s1[r], av, v1);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) {
        _mm512_storeu_ps(y + (size_t)r * g->ldy, s0[r]);
        if (two) _mm512_storeu_ps(y + (size_t)r * g->ldy + 16, s1[r]);
    }
}

VEC static void grid_8x32(const conv_amx_geom_t *g, const uint16_t *a, const uint32_t *b, float *y)
{
    grid_8(g, a, b, y, 1);
}

VEC static void grid_8x16(const conv_amx_geom_t *g, const uint16_t *a, const uint32_t *b, float *y)
{
    grid_8(g, a, b, y, 0);
}

/* Block by block of 32 positions, every output channel: the source's pairs under a block
 * (every tap's reach) are read from the L1 or L2 cache by each of the blocks of 8 output
 * channels after the first. The grid's cells end at rows * PW, and the values past them
 * are never read (conv.c reads rows x cols of the grid): a last block of 16 or fewer takes 16 columns, not the 32 of
 * N's rounding (ResNet-20's 8x8 planes: 80 cells of a grid of 96). */
VEC void conv_amx_vectors_grid(const conv_amx_geom_t *g, const uint16_t *wp, const uint32_t *xs, float *y)
{
    const int KK = g->KH * g->KW, nch = g->Cp / g->kc;
    const size_t mstep = (size_t)KK * nch * 16 * g->kc, cells = (size_t)g->rows * g->PW;
    for (size_t g0 = 0; g0 < cells; g0 += 32)
        for (int m8 = 0; m8 < g->Mp / 8; m8++) {
            const uint16_t *a = wp + (size_t)(m8 / 2) * mstep + (size_t)(m8 % 2) * 8 * g->kc;
            float *yb = y + (size_t)m8 * 8 * g->ldy + g0;
            if (cells - g0 > 16) grid_8x32(g, a, xs + g0, yb);
            else grid_8x16(g, a, xs + g0, yb);
        }
}

/* ---- the weight gradient --------------------------------------------------------------- */

/* 8 channels' rounded planes x (L apart) at two taps' offsets oa and ob against two
 * blocks of 16 output channels' packed dout da and db, over the grid's pairs of positions:
 * sums[0] (+)= x at oa against da, sums[1] (+)= x at ob against db, each 8 rows of 16
 * floats 16 apart. same_tap (oa == ob): one broadcast serves both; one_block (da == db):
 * one load serves both; single: only sums[0]. The flags are constants at each call. */
VEC INLINE void wgrad_8(const conv_amx_geom_t *g, const uint16_t *x, size_t oa, size_t ob, const uint16_t *da,
                        const uint16_t *db, float *const sums[2], int first, int same_tap, int one_block, int single)
{
    __m512 s0[8], s1[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) {
        s0[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(sums[0] + r * 16);
        s1[r] = first || single ? _mm512_setzero_ps() : _mm512_loadu_ps(sums[1] + r * 16);
    }
    /* dout is zero past the grid's cells (conv_amx.c's packing), so the sums stop there,
     * not at Nk's rounding to 32 (ResNet-20's 8x8 planes: 40 pairs, not 48) */
    const size_t pairs = ((size_t)g->rows * g->PW + 1) / 2, L = g->L;
    for (size_t p = 0; p < pairs; p++) {
        const __m512bh v0 = (__m512bh)_mm512_loadu_si512(da + p * 32);
        const __m512bh v1 = one_block ? v0 : (__m512bh)_mm512_loadu_si512(db + p * 32);
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            const uint16_t *row = x + (size_t)r * L + 2 * p;
            const __m512bh a0 = pair_at(row + oa);
            s0[r] = _mm512_dpbf16_ps(s0[r], a0, v0);
            if (single) continue;
            s1[r] = _mm512_dpbf16_ps(s1[r], same_tap ? a0 : pair_at(row + ob), v1);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) {
        _mm512_storeu_ps(sums[0] + r * 16, s0[r]);
        if (!single) _mm512_storeu_ps(sums[1] + r * 16, s1[r]);
    }
}

VEC static void wgrad_two_blocks(const conv_amx_geom_t *g, const uint16_t *x, size_t o, const uint16_t *da,
                                 const uint16_t *db, float *const sums[2], int first)
{
    wgrad_8(g, x, o, o, da, db, sums, first, 1, 0, 0);
}

VEC static void wgrad_two_taps(const conv_amx_geom_t *g, const uint16_t *x, size_t oa, size_t ob, const uint16_t *d,
                               float *const sums[2], int first)
{
    wgrad_8(g, x, oa, ob, d, d, sums, first, 0, 1, 0);
}

VEC static void wgrad_one(const conv_amx_geom_t *g, const uint16_t *x, size_t o, const uint16_t *d,
                          float *const sums[2], int first)
{
    wgrad_8(g, x, o, o, d, d, sums, first, 1, 1, 1);
}

/* One block of output channels at two taps of a row two columns apart (offsets o and
 * o + 2): x's pair at 2p + o + 2 is its pair at 2(p + 1) + o, so each broadcast serves
 * both taps, the first against dout's pair p and the second against pair p - 1 (zero
 * before the first; one more broadcast after the last pair). Half wgrad_two_taps's
 * broadcasts: on a block of 16 output channels the loads, not the products, had bound
 * that loop (388 GFLOP/s against 503 with two blocks; conv_amx_wgrad, a Zen 5). */
VEC static void wgrad_shifted(const conv_amx_geom_t *g, const uint16_t *x, size_t o, const uint16_t *d,
                              float *const sums[2], int first)
{
    __m512 s0[8], s1[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) {
        s0[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(sums[0] + r * 16);
        s1[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(sums[1] + r * 16);
    }
    const size_t pairs = ((size_t)g->rows * g->PW + 1) / 2, L = g->L;
    __m512bh prev = (__m512bh)_mm512_setzero_si512();
    for (size_t p = 0; p < pairs; p++) {
        const __m512bh v = (__m512bh)_mm512_loadu_si512(d + p * 32);
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            const __m512bh a = pair_at(x + (size_t)r * L + 2 * p + o);
            s0[r] = _mm512_dpbf16_ps(s0[r], a, v);
            s1[r] = _mm512_dpbf16_ps(s1[r], a, prev);
        }
        prev = v;
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) {
        s1[r] = _mm512_dpbf16_ps(s1[r], pair_at(x + (size_t)r * L + 2 * pairs + o), prev);
        _mm512_storeu_ps(sums[0] + r * 16, s0[r]);
        _mm512_storeu_ps(sums[1] + r * 16, s1[r]);
    }
}

/* Each 8 channels: the output channels' blocks two at a time at every tap, then an odd
 * last block at the taps two columns apart in a row together (wgrad_shifted), the other
 * taps two at a time, an odd last one alone. */
VEC void conv_amx_vectors_wgrad(const conv_amx_geom_t *g, const uint16_t *dv, const uint16_t *x16, float *acc, int first)
{
    const int KK = g->KH * g->KW, mbn = g->Mp / 16;
    const size_t blk = g->Nk * 16; /* dout's packed values a block of 16 output channels */
    for (int c8 = 0; c8 < g->Cp / 8; c8++) {
        const int cb = c8 / 2, h = c8 % 2;
        const uint16_t *x = x16 + (size_t)c8 * 8 * g->L;
#define SUMS(mb, t) (acc + (((size_t)cb * mbn + (mb)) * KK + (t)) * 256 + (size_t)h * 8 * 16)
        int mb = 0;
        for (; mb + 1 < mbn; mb += 2)
            for (int t = 0; t < KK; t++) {
                float *const sums[2] = {SUMS(mb, t), SUMS(mb + 1, t)};
                wgrad_two_blocks(g, x, conv_amx_tap(g, t), dv + (size_t)mb * blk, dv + (size_t)(mb + 1) * blk, sums,
                                 first);
            }
        if (mb == mbn) continue;
        const uint16_t *d = dv + (size_t)mb * blk;
        int held = -1; /* a tap without a partner two columns on, waiting for another */
        for (int t = 0; t < KK; t++) {
            const int kw = t % g->KW;
            /* kw with kw + 2: 0 and 2, 1 and 3, 4 and 6, ...; at stride 2 they are one
             * column apart on their phase, not two */
            const int shifts = g->stride == 1;
            if (shifts && kw % 4 >= 2) continue; /* kw - 2's partner */
            if (shifts && kw + 2 < g->KW) {
                float *const sums[2] = {SUMS(mb, t), SUMS(mb, t + 2)};
                wgrad_shifted(g, x, conv_amx_tap(g, t), d, sums, first);
            } else if (held < 0) {
                held = t;
            } else {
                float *const sums[2] = {SUMS(mb, held), SUMS(mb, t)};
                wgrad_two_taps(g, x, conv_amx_tap(g, held), conv_amx_tap(g, t), d, sums, first);
                held = -1;
            }
        }
        if (held >= 0) {
            float *const sums[2] = {SUMS(mb, held), NULL};
            wgrad_one(g, x, conv_amx_tap(g, held), d, sums, first);
        }
#undef SUMS
    }
}
