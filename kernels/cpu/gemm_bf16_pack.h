/* kernels/cpu/gemm_bf16_pack.h - gemm_bf16.c's products on the bf16 units for operands
 * stored either way (float32 or bf16), which the products whose operands are stored in
 * bf16 already (gemm_bf16_act.c) run: the same values get the same packed blocks, hence
 * the same bits; the packed layout, which conv_amx.c's tiles take (dout packed here as a
 * B), and the AMX tile configuration. Internal to kernels/cpu. */
#ifndef PACER_GEMM_BF16_PACK_H
#define PACER_GEMM_BF16_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_isa.h"

#define GEMM_BF16_KB 32         /* k per block */
#define GEMM_BF16_BLK 16        /* rows (A) or columns (B) per block */
#define GEMM_BF16_BLK_ELEMS 512 /* bf16 per packed block: 16 x 32 */

/* A as blocks of 16 rows x 32 k (one AMX tile, rows of 64 bytes), B as blocks of 16 k pairs
 * x 16 columns x 2 (a B row of 64 bytes holds k = 2p and 2p + 1 of 16 columns); both zero
 * padded to whole blocks, block (i, kb) at (i * kbn + kb) * GEMM_BF16_BLK_ELEMS. */
/* The AMX tile configuration _tile_loadconfig takes (palette 1): each tile's rows and
 * bytes a row. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} gemm_bf16_tilecfg_t;

/* An operand as stored: float32 f, or bf16 h where h is not NULL; t its transposition
 * (op(X) = X^T), ld its row stride. */
typedef struct {
    const float *f;
    const uint16_t *h;
    int t, ld;
} gemm_bf16_opnd_t;

/* With bsrc NULL, b holds all of B's column blocks. Otherwise B is packed from bsrc (op(B)
 * K x N) a chunk of column blocks at a time, just before the products read it, into b,
 * which holds gemm_bf16_chunk_blocks of them from block nb0 on: the thread's scratch for
 * B is one chunk, not the whole operand (a 768 x 3072 weight's 4.5 MiB), and each block is
 * still packed once a product. */
typedef struct {
    int mbn, nbn, kbn; /* row blocks of A, column blocks of B, k blocks */
    uint16_t *a, *b;
    const gemm_bf16_opnd_t *bsrc;
    int K, N, nb0;
} gemm_bf16_packed_t;

/* What is added to alpha * sums: beta * C (beta 0: C not read), or, with bias, the bias
 * of each column (C not read): the bits of beta = 1 on C pre-filled with the bias. With
 * round, each result is rounded to bf16 as bf16_act_store rounds it on the bf16 units'
 * paths (vcvtneps2bf16) and written to c16 (row stride ldc) where not NULL, else to C as
 * the float32 of that bf16: a rounded activation written by its product, with no float32
 * block of it in between. */
typedef struct {
    float alpha, beta;
    const float *bias;
    uint16_t *c16;
    int round;
} gemm_bf16_epilogue_t;

/* C's M rows (N columns) set to the bias: beta = 1 on them adds it, on the paths without
 * an epilogue. */
void gemm_bf16_fill_bias(int M, int N, const float *bias, float *C, int ldc);
/* A product's first steps on path isa (the one it runs): with a bias and no products (K <=
 * 0) or the portable path, C set to the bias and *beta 1; with no products, C = *beta *
 * C (0 where *beta is 0), as a BLAS, and 1 returned: nothing left to do. 0 else. */
int gemm_bf16_start(cpu_isa_t isa, int M, int N, int K, const float *bias, float *beta, float *C, int ldc);
/* This thread's scratch for packed A (which 0) or B (1), or a product's float32 output
 * rows before they are rounded (2: fc.c's gemm_forward_rounded), grown to bytes (64-byte
 * aligned); NULL when out of memory. */
void *gemm_bf16_scratch(int which, size_t bytes);
/* The bytes this thread's scratch `which` holds now (0 where it has none) */
size_t gemm_bf16_scratch_held(int which);
/* p->b (allocated by the caller) from a bf16 B^T stored (N, K), row stride ldb: the blocks
 * a product packs of the same values as its B (transposed). The bf16 units' paths only. */
void gemm_bf16_pack_b16_cols(int K, int N, const uint16_t *B, int ldb, const gemm_bf16_packed_t *p);
/* C (M, N) = alpha * op(A) op(B) by e on the bf16 units' path isa (AVX512-BF16 or AMX,
 * which the CPU must have), the operands as stored (float32 or bf16; a bf16 A row-major):
 * packed (A whole, B a chunk of columns at a time), or A's tiles as stored (AMX); a
 * product whose packed A would pass 4 MiB in pieces (gemm_bf16.c's UNITS_A_MAX). 0, or -1
 * without scratch, nothing written. */
int gemm_bf16_units(cpu_isa_t isa, const gemm_bf16_opnd_t *a, const gemm_bf16_opnd_t *b, int M, int N, int K,
                    const gemm_bf16_epilogue_t *e, float *C, int ldc);

#endif
