/* kernels/cpu/conv_amx_loops.h - the tile loops of conv_amx.c, included once for each
 * unit. The includer defines CA_FN(name) (the unit's name for a loop), CA_TARGET, CA_PARAM
 * and CA_ARG (the twin's state as a first parameter, or nothing) and the tile operations
 * CA_CONFIG, CA_RELEASE, CA_ZERO, CA_LOAD (tile, address, stride in bytes), CA_DP (C += A
 * B) and CA_STORE; the tile numbers are constants, as the AMX instructions take them. */

/* y = the convolution on the grid: 2 x 2 tiles (two blocks of 16 output channels by two of
 * 16 positions) or, with one block of channels left, 1 x 4 (1 x 2 for the last 32
 * positions), through every tap and chunk of channels. Tiles 4 and 5 hold A, 6 and 7 B,
 * 0-3 the sums. */
CA_TARGET static void CA_FN(grid_loops)(CA_PARAM const tilecfg_t *cfg, const conv_amx_geom_t *g, const uint16_t *wp,
                                        const uint32_t *xs, float *y)
{
    CA_CONFIG(cfg);
    const int KK = g->KH * g->KW, nch = g->Cp / g->kc, mbn = g->Mp / 16;
    const size_t as = (size_t)g->kc * 2, bs = g->pld * 4, ys = g->ldy * 4, atile = (size_t)16 * g->kc;
    const size_t chunk = (size_t)(g->kc / 2) * g->pld, mstep = (size_t)KK * nch * atile;
    for (int mb = 0; mb < mbn; mb += 2) {
        const int two = mb + 1 < mbn;
        for (size_t g0 = 0; g0 < g->N; g0 += two ? 32 : 64) {
            const int four = !two && g0 + 64 <= g->N;
            CA_ZERO(0);
            CA_ZERO(1);
            CA_ZERO(2);
            CA_ZERO(3);
            for (int t = 0; t < KK; t++) {
                const size_t off = conv_amx_tap(g, t);
                for (int ch = 0; ch < nch; ch++) {
                    const uint16_t *a = wp + (size_t)mb * mstep + ((size_t)t * nch + ch) * atile;
                    const uint32_t *b = xs + (size_t)ch * chunk + g0 + off;
                    CA_LOAD(4, a, as);
                    CA_LOAD(6, b, bs);
                    CA_LOAD(7, b + 16, bs);
                    CA_DP(0, 4, 6);
                    CA_DP(1, 4, 7);
                    if (two) {
                        CA_LOAD(5, a + mstep, as);
                        CA_DP(2, 5, 6);
                        CA_DP(3, 5, 7);
                    } else if (four) {
                        CA_LOAD(6, b + 32, bs);
                        CA_LOAD(7, b + 48, bs);
                        CA_DP(2, 4, 6);
                        CA_DP(3, 4, 7);
                    }
                }
            }
            float *c = y + (size_t)mb * 16 * g->ldy + g0;
            CA_STORE(0, c, ys);
            CA_STORE(1, c + 16, ys);
            if (two || four) {
                CA_STORE(2, two ? c + 16 * g->ldy : c + 32, ys);
                CA_STORE(3, two ? c + 16 * g->ldy + 16 : c + 48, ys);
            }
        }
    }
    CA_RELEASE();
}

/* The sums of taps t0 .. t0 + nt - 1 (nt <= 4, tiles 0-3) of one block of 16 channels by
 * one of 16 output channels: each k block of 32 positions loads dout's packed block once
 * (tile 6: dv is the row block's first, the next k block's 512 values on) and the
 * source's run at each tap's offset (tiles 4 and 5 in turn). */
CA_TARGET static void CA_FN(wgrad_taps)(CA_PARAM const conv_amx_geom_t *g, const uint16_t *dv, const uint16_t *x,
                                        const size_t off[4], int nt, float *acc, int first)
{
    const size_t as = g->L * 2;
    if (first) {
        CA_ZERO(0);
        CA_ZERO(1);
        CA_ZERO(2);
        CA_ZERO(3);
    } else {
        CA_LOAD(0, acc, 64);
        if (nt > 1) CA_LOAD(1, acc + 256, 64);
        if (nt > 2) CA_LOAD(2, acc + 512, 64);
        if (nt > 3) CA_LOAD(3, acc + 768, 64);
    }
    for (size_t k0 = 0; k0 < g->Nk; k0 += 32) {
        CA_LOAD(6, dv + k0 * 16, 64);
        CA_LOAD(4, x + k0 + off[0], as);
        CA_DP(0, 4, 6);
        if (nt > 1) {
            CA_LOAD(5, x + k0 + off[1], as);
            CA_DP(1, 5, 6);
        }
        if (nt > 2) {
            CA_LOAD(4, x + k0 + off[2], as);
            CA_DP(2, 4, 6);
        }
        if (nt > 3) {
            CA_LOAD(5, x + k0 + off[3], as);
            CA_DP(3, 5, 6);
        }
    }
    CA_STORE(0, acc, 64);
    if (nt > 1) CA_STORE(1, acc + 256, 64);
    if (nt > 2) CA_STORE(2, acc + 512, 64);
    if (nt > 3) CA_STORE(3, acc + 768, 64);
}

/* acc (+)= one image's weight gradient, block by block of (channels, output channels,
 * four taps): acc[((cb * (Mp/16) + mb) * KK + t) * 256 + c * 16 + m]. */
CA_TARGET static void CA_FN(wgrad_loops)(CA_PARAM const tilecfg_t *cfg, const conv_amx_geom_t *g, const uint16_t *dv,
                                         const uint16_t *x16, float *acc, int first)
{
    CA_CONFIG(cfg);
    const int KK = g->KH * g->KW, mbn = g->Mp / 16, cbn = g->Cp / 16;
    for (int cb = 0; cb < cbn; cb++)
        for (int mb = 0; mb < mbn; mb++)
            for (int t0 = 0; t0 < KK; t0 += 4) {
                size_t off[4] = {0, 0, 0, 0};
                const int nt = KK - t0 < 4 ? KK - t0 : 4;
                for (int i = 0; i < nt; i++) off[i] = conv_amx_tap(g, t0 + i);
                float *a = acc + (((size_t)cb * mbn + mb) * KK + t0) * 256;
                CA_FN(wgrad_taps)
                (CA_ARG g, dv + (size_t)mb * g->Nk * 16, x16 + (size_t)cb * 16 * g->L, off, nt, a, first);
            }
    CA_RELEASE();
}
