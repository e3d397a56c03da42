/* kernels/cpu/dlanes.h - sums of floats in DLANES lanes of double, as two vectors of four
 * (lanes 0-3 and 4-7), folded in lane order: the row sums of layernorm.c and of softmax.c's
 * cross-entropy. gcc left plain arrays of double lanes partly scalar (vcvtss2sd, vaddsd);
 * the vectors keep them whole, and an order fixed by the lanes gives every clone (AVX2 or
 * not) the same bits. */
#ifndef PACER_KERNELS_CPU_DLANES_H
#define PACER_KERNELS_CPU_DLANES_H

#define DLANES 8

typedef double dlanes_v4d __attribute__((vector_size(32)));

/* four floats from p as doubles (a macro: a function returning the vector warns of the
 * non-AVX ABI in the default clone) */
#define DLANES_LOAD4(p) ((dlanes_v4d){(p)[0], (p)[1], (p)[2], (p)[3]})

/* the lanes' partial sums, folded in lane order */
__attribute__((always_inline)) static inline double dlanes_fold(const dlanes_v4d *lo, const dlanes_v4d *hi)
{
    double s = 0.0;
    for (int k = 0; k < 4; k++) s += (*lo)[k];
    for (int k = 0; k < 4; k++) s += (*hi)[k];
    return s;
}

/* x[0] + ... + x[n - 1] in double: the lanes over the first n / DLANES * DLANES, folded, then
 * the rest in order */
__attribute__((always_inline)) static inline double dlanes_sum(const float *x, int n)
{
    dlanes_v4d s0 = {0}, s1 = {0};
    const int n8 = n / DLANES * DLANES;
    for (int j = 0; j < n8; j += DLANES) {
        s0 += DLANES_LOAD4(x + j);
        s1 += DLANES_LOAD4(x + j + 4);
    }
    double s = dlanes_fold(&s0, &s1);
    for (int j = n8; j < n; j++) s += x[j];
    return s;
}

#endif
