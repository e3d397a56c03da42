/* kernels/cpu/bf16.h - bfloat16: the upper 16 bits of an IEEE float32 (8 exponent bits,
 * 7 stored mantissa bits), as the AVX512-BF16 and AMX units and PyTorch's autocast take it.
 *
 * bf16_from_float rounds to nearest, ties to even (vcvtneps2bf16's rounding and
 * torch.Tensor.bfloat16()'s); a NaN stays a NaN (made quiet, its sign and top payload
 * bits kept), values past bf16's largest finite one round to infinity. The product of two
 * bf16 values is exact in float32 (8 + 8 significant bits <= 24), so a bf16 product summed
 * in float32 rounds only at the sums. */
#ifndef PACER_BF16_H
#define PACER_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* float32 bits rounded to bf16's (the low 16 bits zero): branch-free, so that loops of it
 * vectorise */
static inline uint32_t bf16_round_bits(uint32_t u)
{
    const uint32_t even = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    const uint32_t nan = (u | 0x00400000u) & 0xffff0000u;
    return (u & 0x7fffffffu) > 0x7f800000u ? nan : even;
}

static inline uint16_t bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(bf16_round_bits(u) >> 16);
}

static inline float bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* f rounded to the nearest bf16, as a float */
static inline float bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = bf16_round_bits(u);
    memcpy(&f, &u, sizeof f);
    return f;
}

/* rows x cols of src (row stride ld) rounded to bf16 into the dense dst (row stride cols);
 * dst may be src itself when ld == cols (rounding in place). Vectorised (bf16.c). */
void bf16_round_rows(int rows, int cols, const float *src, size_t ld, float *dst);
/* rows x cols of bf16 src (row stride ld) as float32 into the dense dst (row stride cols):
 * exact. Vectorised (bf16.c). */
void bf16_widen_rows(int rows, int cols, const uint16_t *src, size_t ld, float *dst);

#endif
