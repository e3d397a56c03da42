/* kernels/cpu/conv_winograd_tiles.h - the vector passes of conv_winograd.c, once per ISA.
 *
 * Included by conv_winograd.c only, with the AVX2 macros and with the AVX-512 ones: those
 * of conv_direct_tiles.h and
 *   VADD(a, b)  VSUB(a, b)  VMUL(a, b)  VSET1(x)  (x in every lane)
 * Every pass works lane by lane on vectors of channels with the same operations in the
 * same order, so both ISAs give the same bits. */

/* r = B^T d for one line of six inputs (Lavin and Gray's F(4x4, 3x3)):
 *   r0 = 4 d0 - 5 d2 + d4          r3 = -2 d1 - d2 + 2 d3 + d4
 *   r1 = -4 d1 - 4 d2 + d3 + d4    r4 = 2 d1 - d2 - 2 d3 + d4
 *   r2 = 4 d1 - 4 d2 - d3 + d4     r5 = 4 d1 - 5 d3 + d5 */
TARGET __attribute__((always_inline)) static inline void SFX(bt6)(const VEC *d, VEC *r)
{
    const VEC four = VSET1(4.0f), mfour = VSET1(-4.0f), mfive = VSET1(-5.0f), two = VSET1(2.0f);
    const VEC t0 = VFMA(mfour, d[2], d[4]), t1 = VFMA(mfour, d[1], d[3]);
    const VEC t2 = VSUB(d[4], d[2]), t3 = VMUL(two, VSUB(d[3], d[1]));
    r[0] = VFMA(four, d[0], VFMA(mfive, d[2], d[4]));
    r[1] = VADD(t0, t1);
    r[2] = VSUB(t0, t1);
    r[3] = VADD(t2, t3);
    r[4] = VSUB(t2, t3);
    r[5] = VFMA(four, d[1], VFMA(mfive, d[3], d[5]));
}

/* o = A^T m for one line of six products:
 *   o0 = m0 + m1 + m2 + m3 + m4    o2 = m1 + m2 + 4 (m3 + m4)
 *   o1 = m1 - m2 + 2 (m3 - m4)     o3 = m1 - m2 + 8 (m3 - m4) + m5 */
TARGET __attribute__((always_inline)) static inline void SFX(at6)(const VEC *m, VEC *o)
{
    const VEC s12 = VADD(m[1], m[2]), d12 = VSUB(m[1], m[2]), s34 = VADD(m[3], m[4]), d34 = VSUB(m[3], m[4]);
    o[0] = VADD(VADD(m[0], s12), s34);
    o[1] = VFMA(VSET1(2.0f), d34, d12);
    o[2] = VFMA(VSET1(4.0f), s34, s12);
    o[3] = VADD(VFMA(VSET1(8.0f), d34, d12), m[5]);
}

/* m = A y for one line of four output gradients (the adjoint of at6):
 *   m0 = y0                    m3 = y0 + 2 y1 + 4 y2 + 8 y3
 *   m1 = y0 + y1 + y2 + y3     m4 = y0 - 2 y1 + 4 y2 - 8 y3
 *   m2 = y0 - y1 + y2 - y3     m5 = y3 */
TARGET __attribute__((always_inline)) static inline void SFX(a4)(const VEC *y, VEC *m)
{
    const VEC e = VADD(y[0], y[2]), o = VADD(y[1], y[3]);
    const VEC e4 = VFMA(VSET1(4.0f), y[2], y[0]), o8 = VFMA(VSET1(8.0f), y[3], VMUL(VSET1(2.0f), y[1]));
    m[0] = y[0];
    m[1] = VADD(e, o);
    m[2] = VSUB(e, o);
    m[3] = VADD(e4, o8);
    m[4] = VSUB(e4, o8);
    m[5] = y[3];
}

/* V (36, T, Cp) = B^T d B of every tile's 6x6 block of the channel-last input xt. */
TARGET static void SFX(wino_input)(const wino_geom_t *g, int n, const float *xt, float *V)
{
    const int Cp = g->Cp, T = n * g->TH * g->TW;
    const size_t row = (size_t)g->PW * Cp, img = (size_t)g->PH * row, vs = point_stride(T, Cp);
    int t = 0;
    for (int b = 0; b < n; b++)
        for (int th = 0; th < g->TH; th++)
            for (int tw = 0; tw < g->TW; tw++, t++) {
                const float *x0 = xt + (size_t)b * img + (size_t)(4 * th) * row + (size_t)(4 * tw) * Cp;
                float *v0 = V + (size_t)t * Cp;
                for (int c = 0; c < Cp; c += VW) {
                    VEC e[6][6], d[6], r[6];
                    for (int j = 0; j < 6; j++) {
                        for (int i = 0; i < 6; i++) d[i] = VLOAD(x0 + (size_t)i * row + (size_t)j * Cp + c);
                        SFX(bt6)(d, r);
                        for (int i = 0; i < 6; i++) e[i][j] = r[i];
                    }
                    for (int i = 0; i < 6; i++) {
                        SFX(bt6)(e[i], r);
                        for (int j = 0; j < 6; j++) VSTORE(v0 + (size_t)(i * 6 + j) * vs + c, r[j]);
                    }
                }
            }
}

/* dM (36, T, Kp) = A dy A^T of every tile's 4x4 block of the channel-last output
 * gradient dyt (n images of at least 4*TH rows of `row` floats, image b at b*img, pixels
 * of Kp channels; zeros past the planes). */
TARGET static void SFX(wino_dout)(const wino_geom_t *g, int n, const float *dyt, size_t row, size_t img, float *dM)
{
    const int Kp = g->Kp, T = n * g->TH * g->TW;
    const size_t ms = point_stride(T, Kp);
    int t = 0;
    for (int b = 0; b < n; b++)
        for (int th = 0; th < g->TH; th++)
            for (int tw = 0; tw < g->TW; tw++, t++) {
                const float *y0 = dyt + (size_t)b * img + (size_t)(4 * th) * row + (size_t)(4 * tw) * Kp;
                float *m0 = dM + (size_t)t * Kp;
                for (int k = 0; k < Kp; k += VW) {
                    VEC e[6][4], y[4], m[6];
                    for (int j = 0; j < 4; j++) {
                        for (int i = 0; i < 4; i++) y[i] = VLOAD(y0 + (size_t)i * row + (size_t)j * Kp + k);
                        SFX(a4)(y, m);
                        for (int i = 0; i < 6; i++) e[i][j] = m[i];
                    }
                    for (int i = 0; i < 6; i++) {
                        SFX(a4)(e[i], m);
                        for (int j = 0; j < 6; j++) VSTORE(m0 + (size_t)(i * 6 + j) * ms + k, m[j]);
                    }
                }
            }
}

/* The tiles (or input channels) of a block of two vectors: as many as the registers hold */
#define WNT2 (VW == 16 ? 8 : 6)

/* Where output channel k of input channel c lies in U_p (blocks of 16 output channels) */
static inline size_t SFX(u_at_k)(const wino_geom_t *g, int c, int k) { return u_at(g, c, k & ~15) + (size_t)(k & 15); }

/* M (36, T, Kp): for each point p, M_p (T, Kp) = V_p (T, Cp) x U_p (Cp, Kp), each output
 * summed over c in order, one FMA a term. A tile of the GEMM is nv vectors of output
 * channels by nt tiles (the tiles past T repeat the last and are not stored): on AVX2 2 by
 * 6 (12 accumulators of its 16 registers); on AVX-512 2 by 8, 2 loads and 8 broadcasts a
 * term for 16 FMAs (1 by 12 had 12 broadcasts for 12, and ran the 64x8x8 layers' GEMMs at
 * half the FMAs' peak), and 1 by 12 where 16 output channels are left. nv and nt are
 * constants at each call. */
TARGET __attribute__((always_inline)) static inline void SFX(gemm_block)(const wino_geom_t *g, int T, const float *Up,
                                                                         const float *Vp, float *Mp, int k0, int t0,
                                                                         int nv, int nt)
{
    const int Cp = g->Cp, Kp = g->Kp;
    const float *q[12], *u[2];
    for (int i = 0; i < nt; i++) q[i] = Vp + (size_t)(t0 + i < T ? t0 + i : T - 1) * Cp;
    for (int v = 0; v < nv; v++) u[v] = Up + SFX(u_at_k)(g, 0, k0 + v * VW);
    VEC acc[12][2];
#pragma GCC unroll 12
    for (int i = 0; i < nt; i++)
        for (int v = 0; v < nv; v++) acc[i][v] = VZERO();
    for (int c = 0; c < Cp; c++) {
        VEC w[2];
        for (int v = 0; v < nv; v++) w[v] = VLOAD(u[v] + (size_t)c * 16);
#pragma GCC unroll 12
        for (int i = 0; i < nt; i++) {
            const VEC b = VBCAST(q[i] + c);
            for (int v = 0; v < nv; v++) acc[i][v] = VFMA(w[v], b, acc[i][v]);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < nt; i++)
        if (t0 + i < T)
            for (int v = 0; v < nv; v++) VSTORE(Mp + (size_t)(t0 + i) * Kp + k0 + v * VW, acc[i][v]);
}

TARGET static void SFX(wino_gemm)(const wino_geom_t *g, int T, const float *U, const float *V, float *M)
{
    const int Cp = g->Cp, Kp = g->Kp;
    for (int p = 0; p < WINO_POINTS; p++) {
        const float *Up = U + (size_t)p * u_stride(g), *Vp = V + (size_t)p * point_stride(T, Cp);
        float *Mp = M + (size_t)p * point_stride(T, Kp);
        for (int k0 = 0; k0 < Kp; k0 += 2 * VW)
            if (Kp - k0 >= 2 * VW)
                for (int t0 = 0; t0 < T; t0 += WNT2) SFX(gemm_block)(g, T, Up, Vp, Mp, k0, t0, 2, WNT2);
            else /* AVX-512's last 16 output channels */
                for (int t0 = 0; t0 < T; t0 += 12) SFX(gemm_block)(g, T, Up, Vp, Mp, k0, t0, 1, 12);
    }
}

/* dU (36, Cp, Kp) += for each point p, V_p^T (Cp, T) x dM_p (T, Kp), summed over the
 * tiles in order: nv vectors of dM's channels by nc input channels a block (as gemm_block's
 * tiles: 2 by 6 on AVX2, 2 by 8 or 1 by 12 on AVX-512), the input channels past Cp
 * repeating the last and not stored. */
TARGET __attribute__((always_inline)) static inline void SFX(wgemm_block)(const wino_geom_t *g, int T, const float *Vp,
                                                                          const float *Mp, float *Up, int k0, int c0,
                                                                          int nv, int nc)
{
    const int Cp = g->Cp, Kp = g->Kp;
    int ci[12];
    for (int i = 0; i < nc; i++) ci[i] = c0 + i < Cp ? c0 + i : Cp - 1;
    VEC acc[12][2];
#pragma GCC unroll 12
    for (int i = 0; i < nc; i++)
        for (int v = 0; v < nv; v++) acc[i][v] = VZERO();
    for (int t = 0; t < T; t++) {
        const float *m = Mp + (size_t)t * Kp + k0, *x = Vp + (size_t)t * Cp;
        VEC w[2];
        for (int v = 0; v < nv; v++) w[v] = VLOAD(m + v * VW);
#pragma GCC unroll 12
        for (int i = 0; i < nc; i++) {
            const VEC b = VBCAST(x + ci[i]);
            for (int v = 0; v < nv; v++) acc[i][v] = VFMA(w[v], b, acc[i][v]);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < nc; i++)
        if (c0 + i < Cp)
            for (int v = 0; v < nv; v++) {
                float *u = Up + SFX(u_at_k)(g, c0 + i, k0 + v * VW);
                VSTORE(u, VADD(VLOAD(u), acc[i][v]));
            }
}

TARGET static void SFX(wino_wgemm)(const wino_geom_t *g, int T, const float *V, const float *dM, float *dU)
{
    const int Cp = g->Cp, Kp = g->Kp;
    for (int p = 0; p < WINO_POINTS; p++) {
        const float *Vp = V + (size_t)p * point_stride(T, Cp), *Mp = dM + (size_t)p * point_stride(T, Kp);
        float *Up = dU + (size_t)p * u_stride(g);
        for (int k0 = 0; k0 < Kp; k0 += 2 * VW)
            if (Kp - k0 >= 2 * VW)
                for (int c0 = 0; c0 < Cp; c0 += WNT2) SFX(wgemm_block)(g, T, Vp, Mp, Up, k0, c0, 2, WNT2);
            else
                for (int c0 = 0; c0 < Cp; c0 += 12) SFX(wgemm_block)(g, T, Vp, Mp, Up, k0, c0, 1, 12);
    }
}
#undef WNT2

/* y (n, K, H, W) = A^T M A of every tile (+ bias), or += it: each tile's 4x4 outputs for
 * all Kp channels into tile (16, Kp), then onto the planes (conv_winograd.c, tile_out). */
TARGET static void SFX(wino_output)(const wino_geom_t *g, int n, const float *M, const float *bias, int accumulate,
                                    float *y, float *tile)
{
    const int Kp = g->Kp, T = n * g->TH * g->TW;
    const size_t ms = point_stride(T, Kp), img = (size_t)g->K * g->H * g->W;
    int t = 0;
    for (int b = 0; b < n; b++)
        for (int th = 0; th < g->TH; th++)
            for (int tw = 0; tw < g->TW; tw++, t++) {
                const float *m0 = M + (size_t)t * Kp;
                for (int k = 0; k < Kp; k += VW) {
                    VEC e[4][6], m[6], o[4];
                    for (int j = 0; j < 6; j++) {
                        for (int i = 0; i < 6; i++) m[i] = VLOAD(m0 + (size_t)(i * 6 + j) * ms + k);
                        SFX(at6)(m, o);
                        for (int i = 0; i < 4; i++) e[i][j] = o[i];
                    }
                    for (int i = 0; i < 4; i++) {
                        SFX(at6)(e[i], o);
                        for (int j = 0; j < 4; j++) VSTORE(tile + (size_t)(i * 4 + j) * Kp + k, o[j]);
                    }
                }
                tile_out(g, tile, th, tw, bias, accumulate, y + (size_t)b * img);
            }
}
