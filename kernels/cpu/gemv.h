/* kernels/cpu/gemv.h - one row through a linear layer: out (OUT) = W (OUT, IN) x in + bias.
 * Generation (model/generate.c) runs each new token as one row, where OpenBLAS's
 * matrix-vector product reads the weights faster than a GEMM of one row (about 1.5x on a
 * 1536 x 384 weight). Not bit for bit gemm_forward's: training never calls it. */
#ifndef PACER_GEMV_H
#define PACER_GEMV_H

/* w (OUT, IN) row-major (torch's Linear), bias (OUT) or NULL. */
void gemv_forward(int IN, int OUT, const float *in, const float *w, const float *bias, float *out);

#endif
