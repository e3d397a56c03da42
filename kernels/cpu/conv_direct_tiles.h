/* kernels/cpu/conv_direct_tiles.h - the tile kernels of conv_direct.c, once per vector ISA.
 *
 * Included by conv_direct.c only, twice: with the AVX2 macros (8-float vectors) and with
 * the AVX-512 ones (16-float vectors). The includer defines
 *   SFX(name)   the function's name for this ISA        TARGET  its target attribute
 *   VW          floats per vector                       VEC     the vector type
 *   VLOAD(p)    unaligned load                          VSTORE(p, v)  unaligned store
 *   VBCAST(p)   *p in every lane                        VZERO() zeros
 *   VFMA(a, b, c)  a*b + c, one rounding                VHSUM(v)  the sum of the lanes
 * Every output of the forward kernels is summed over k in order with one FMA per term,
 * whatever VW is, so both ISAs give the same bits there; the weight gradients' sums are
 * split over lanes, so they differ in rounding between the two. */

/* Grid tile: 4 rows of A by 3 vectors of grid columns (24 or 48 columns), rows i < mr
 * stored. 12 accumulators, 3 loaded runs, one broadcast weight, in named variables: with
 * an array of accumulators the AVX2 16-channel layers' forward took 59 ms instead of 42
 * in layer_profile (one run; the code gcc made of it was not examined). */
TARGET __attribute__((always_inline)) static inline void SFX(grid_tile)(const float *restrict ap,
                                                                        const direct_geom_t *g, const float *restrict x,
                                                                        float *restrict y, size_t ldy, int mr)
{
    VEC c00 = VZERO(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
    VEC c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
    const size_t row = (size_t)g->dH * g->PW;
    for (int c = 0; c < g->C; c++) {
        const float *pc = x + (size_t)c * g->pld;
        for (int kh = 0; kh < g->KH; kh++, pc += row) {
            const float *p = pc;
            for (int kw = 0; kw < g->KW; kw++, p += g->dW, ap += DIRECT_MR) {
                const VEC b0 = VLOAD(p), b1 = VLOAD(p + VW), b2 = VLOAD(p + 2 * VW);
                VEC a = VBCAST(ap);
                c00 = VFMA(a, b0, c00), c01 = VFMA(a, b1, c01), c02 = VFMA(a, b2, c02);
                a = VBCAST(ap + 1);
                c10 = VFMA(a, b0, c10), c11 = VFMA(a, b1, c11), c12 = VFMA(a, b2, c12);
                a = VBCAST(ap + 2);
                c20 = VFMA(a, b0, c20), c21 = VFMA(a, b1, c21), c22 = VFMA(a, b2, c22);
                a = VBCAST(ap + 3);
                c30 = VFMA(a, b0, c30), c31 = VFMA(a, b1, c31), c32 = VFMA(a, b2, c32);
            }
        }
    }
    VSTORE(y, c00), VSTORE(y + VW, c01), VSTORE(y + 2 * VW, c02);
    if (mr < 2) return;
    y += ldy;
    VSTORE(y, c10), VSTORE(y + VW, c11), VSTORE(y + 2 * VW, c12);
    if (mr < 3) return;
    y += ldy;
    VSTORE(y, c20), VSTORE(y + VW, c21), VSTORE(y + 2 * VW, c22);
    if (mr < 4) return;
    y += ldy;
    VSTORE(y, c30), VSTORE(y + VW, c31), VSTORE(y + 2 * VW, c32);
}

TARGET static void SFX(direct_gemm)(int M, const float *Ap, const direct_geom_t *g, const float *x, float *y, size_t ldy)
{
    const size_t K = (size_t)g->C * g->KH * g->KW;
    for (int j = 0; j < g->N; j += 3 * VW)
        for (int m0 = 0; m0 < M; m0 += DIRECT_MR) SFX(grid_tile)
    (Ap + (size_t)m0 * K, g, x + j, y + (size_t)m0 * ldy + j, ldy, M - m0 < DIRECT_MR ? M - m0 : DIRECT_MR);
}

/* The weight gradient on the grid: 4 rows of dy by 3 taps, 12 accumulators over the
 * grid's columns; the rows past M and the taps past K repeat the last one and are not
 * stored. */
TARGET static void SFX(direct_gemm_wgrad)(int M, const float *dy, size_t ldd, const direct_geom_t *g, int n,
                                          const float *x, float *dw, int accumulate)
{
    const int K = g->C * g->KH * g->KW;
    for (int m0 = 0; m0 < M; m0 += 4) {
        const float *d[4];
        for (int i = 0; i < 4; i++) d[i] = dy + (size_t)(m0 + i < M ? m0 + i : M - 1) * ldd;
        for (int k0 = 0; k0 < K; k0 += 3) {
            const float *r0 = tap_run(g, x, k0), *r1 = tap_run(g, x, k0 + 1 < K ? k0 + 1 : K - 1),
                        *r2 = tap_run(g, x, k0 + 2 < K ? k0 + 2 : K - 1);
            VEC acc[4][3];
            for (int i = 0; i < 4; i++) acc[i][0] = acc[i][1] = acc[i][2] = VZERO();
            for (int j = 0; j < n; j += VW) {
                const VEC x0 = VLOAD(r0 + j), x1 = VLOAD(r1 + j), x2 = VLOAD(r2 + j);
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) {
                    const VEC v = VLOAD(d[i] + j);
                    acc[i][0] = VFMA(v, x0, acc[i][0]);
                    acc[i][1] = VFMA(v, x1, acc[i][1]);
                    acc[i][2] = VFMA(v, x2, acc[i][2]);
                }
            }
            for (int i = 0; i < 4 && m0 + i < M; i++)
                for (int q = 0; q < 3 && k0 + q < K; q++) {
                    float *o = dw + (size_t)(m0 + i) * K + k0 + q;
                    *o = accumulate ? *o + VHSUM(acc[i][q]) : VHSUM(acc[i][q]);
                }
        }
    }
}

/* Channel-vector tile: 2 vectors of rows of A (2*VW channels) by 6 output positions. */
TARGET static void SFX(direct_conv_cv)(int M, const float *Ap, const direct_geom_t *g, int rows, int cols,
                                       const float *x, const float *bias, int accumulate, float *y)
{
    const int P = rows * cols;
    const size_t K = (size_t)g->C * g->KH * g->KW, row = (size_t)g->dH * g->PW;
    for (int m0 = 0; m0 < M; m0 += 2 * VW) {
        const float *apm = Ap + (size_t)m0 * K;
        for (int p0 = 0; p0 < P; p0 += 6) {
            const float *q[6];
            for (int i = 0; i < 6; i++) q[i] = x + grid_pos(g, p0 + i < P ? p0 + i : P - 1, cols);
            VEC acc[6][2];
            for (int i = 0; i < 6; i++) acc[i][0] = acc[i][1] = VZERO();
            const float *ap = apm;
            for (int c = 0; c < g->C; c++)
                for (int kh = 0; kh < g->KH; kh++) {
                    const size_t base = (size_t)c * g->pld + (size_t)kh * row;
                    for (int kw = 0; kw < g->KW; kw++, ap += 2 * VW) {
                        const size_t off = base + (size_t)kw * g->dW;
                        const VEC w0 = VLOAD(ap), w1 = VLOAD(ap + VW);
#pragma GCC unroll 6
                        for (int i = 0; i < 6; i++) {
                            const VEC b = VBCAST(q[i] + off);
                            acc[i][0] = VFMA(w0, b, acc[i][0]);
                            acc[i][1] = VFMA(w1, b, acc[i][1]);
                        }
                    }
                }
            float t[6 * 2 * VW];
            for (int i = 0; i < 6; i++) VSTORE(t + i * 2 * VW, acc[i][0]), VSTORE(t + i * 2 * VW + VW, acc[i][1]);
            store_tile(t, 2 * VW, M - m0 < 2 * VW ? M - m0 : 2 * VW, P - p0 < 6 ? P - p0 : 6, y + (size_t)m0 * P,
                       (size_t)P, (size_t)p0, bias ? bias + m0 : NULL, accumulate);
        }
    }
}

/* The channel-vector weight gradient: 2*VW rows of dy (vectors of dyT) by 6 taps, summed
 * over the positions of nimg images, image by image. */
TARGET static void SFX(direct_wgrad_cv)(int M, const float *dyT, const direct_geom_t *g, int rows, int cols, int nimg,
                                        size_t ximg, const float *x, float *dw, int accumulate)
{
    const int K = g->C * g->KH * g->KW, MV = (M + 2 * VW - 1) / (2 * VW) * (2 * VW);
    for (int m0 = 0; m0 < M; m0 += 2 * VW)
        for (int k0 = 0; k0 < K; k0 += 6) {
            const float *r[6];
            for (int i = 0; i < 6; i++) r[i] = tap_run(g, x, k0 + i < K ? k0 + i : K - 1);
            VEC acc[6][2];
            for (int i = 0; i < 6; i++) acc[i][0] = acc[i][1] = VZERO();
            const float *d = dyT + m0;
            for (int im = 0; im < nimg; im++)
                for (int h = 0; h < rows; h++) {
                    const size_t o = (size_t)im * ximg + (size_t)h * g->sH * g->PW;
                    for (int w = 0; w < cols; w++, d += MV) {
                        const VEC d0 = VLOAD(d), d1 = VLOAD(d + VW);
                        const size_t ow = o + (size_t)w * g->sW;
#pragma GCC unroll 6
                        for (int i = 0; i < 6; i++) {
                            const VEC b = VBCAST(r[i] + ow);
                            acc[i][0] = VFMA(d0, b, acc[i][0]);
                            acc[i][1] = VFMA(d1, b, acc[i][1]);
                        }
                    }
                }
            float t[6 * 2 * VW];
            for (int i = 0; i < 6; i++) VSTORE(t + i * 2 * VW, acc[i][0]), VSTORE(t + i * 2 * VW + VW, acc[i][1]);
            store_tile(t, 2 * VW, M - m0 < 2 * VW ? M - m0 : 2 * VW, K - k0 < 6 ? K - k0 : 6, dw + (size_t)m0 * K,
                       (size_t)K, (size_t)k0, NULL, accumulate);
        }
}
