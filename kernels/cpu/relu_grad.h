/* kernels/cpu/relu_grad.h - a ReLU's input gradient at one element, as the vectorisable
 * expression its users share (elementwise.c's relu_backward and relu_backward_set,
 * batchnorm.c's fused batch norm + ReLU backward).
 *
 * (o > 0 ? g : 0) + 0.0f, o the ReLU's output: exactly what relu_backward accumulates into
 * a zeroed buffer (the + 0.0f turns -0 into +0 as that sum does). The select is a bit
 * mask: written with ?: gcc branches around the load of g and does not vectorise the
 * loop (ResNet-20's ReLU gradients took 4.7x as long, one layer_profile run each). */
#ifndef PACER_RELU_GRAD_H
#define PACER_RELU_GRAD_H

#include <stdint.h>
#include <string.h>

static inline __attribute__((always_inline)) float relu_grad(float g, float o)
{
    uint32_t bits;
    memcpy(&bits, &g, sizeof bits);
    bits &= 0u - (uint32_t)(o > 0.0f);
    float r;
    memcpy(&r, &bits, sizeof r);
    return r + 0.0f;
}

#endif
