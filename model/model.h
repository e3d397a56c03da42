/* model/model.h - the four networks pacer trains, as a list of layers over fused buffers.
 *
 * Memory layout (the llm.c habit): one allocation holds every parameter, one every
 * gradient, one the optimizer's momentum, one the non-trained buffers (batch-norm running
 * statistics). Each tensor is a view at an offset recorded in tensors[]. The same layout
 * serves the forward pass, the optimizer, checkpoint I/O, one fused MPI message and, later,
 * one device buffer per kind on the GPU with identical offsets.
 *
 * Activations live in one arena sized for max_batch, so the batch size may change between
 * steps (dynamic batching) without allocating. model_create is the only function here that
 * allocates; forward, backward and evaluation never do.
 */
#ifndef PACER_MODEL_H
#define PACER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

#define MODEL_MAX_LAYERS 96
#define MODEL_MAX_TENSORS 128
#define MODEL_NAME_MAX 32
/* grads has this many spare floats after the last gradient, so an algorithm can append
 * [batch, batch * loss, batch * |g|^2, 1 if batch > 0] (the last two for the gradient
 * noise scale, common/gns.h) and send gradients and weights in ONE fused message. */
#define MODEL_GRAD_EXTRA 4
/* Momentum of the batch-norm running statistics (PyTorch's 0.1): the host model and its
 * CUDA twin (model_cuda.cu) both pass this one value to their batch-norm kernels. */
#define MODEL_BN_MOMENTUM 0.1f

typedef enum {
    LAYER_CONV,
    LAYER_MAXPOOL,
    LAYER_AVGPOOL,
    LAYER_RELU,
    LAYER_FC,
    LAYER_BN,
    LAYER_GAP,
    LAYER_ADD,
} layer_kind_t;

typedef struct {
    layer_kind_t kind;
    int in;         /* producing layer of the input; -1 = the model input */
    int in2;        /* LAYER_ADD: producing layer of the shortcut input */
    int C, H, W;    /* input shape of one sample */
    int OC, OH, OW; /* output shape of one sample */
    conv2d_desc_t conv;
    pool2d_desc_t pool;
    shortcut_desc_t sc;
    int has_bias;
    size_t w_off, b_off;   /* params: conv/fc weight and bias, bn gamma and beta */
    size_t rm_off, rv_off; /* buffers: bn running mean and variance */
    size_t out_off;        /* activation arena: (max_batch, OC, OH, OW) */
    size_t aux_off;        /* maxpool argmax arena, or bn saved mean/invstd (2*OC) */
} layer_t;

typedef struct {
    char name[MODEL_NAME_MAX]; /* "conv1.weight" */
    size_t offset, count;      /* into params (or buffers when is_buffer) */
    int is_buffer;
} tensor_info_t;

typedef struct {
    char name[MODEL_NAME_MAX];
    int C, H, W, num_classes; /* input and output of the network */
    int max_batch;

    layer_t layers[MODEL_MAX_LAYERS];
    int nlayers;
    tensor_info_t tensors[MODEL_MAX_TENSORS];
    int ntensors;

    size_t nparams;  /* floats in params, grads and momentum */
    size_t nbuffers; /* floats in buffers */
    float *params;   /* fused parameters */
    float *grads;    /* fused gradients, same offsets, + MODEL_GRAD_EXTRA */
    float *momentum; /* optimizer state, same offsets */
    float *buffers;  /* bn running stats */

    size_t act_floats; /* per arena */
    float *acts;       /* every layer's output */
    float *dacts;      /* gradient of every layer's output */
    float *aux;        /* bn saved statistics */
    int32_t *argmax;   /* maxpool argmax */
    float *ws;         /* conv workspace */
    size_t ws_floats;
    float *probs;  /* (max_batch, num_classes) softmax of the logits */
    float *dinput; /* NULL: the input gradient is never needed */

    /* Called between layers in forward and backward when set: lets an algorithm drive a
     * nonblocking MPI collective (MPI_Test) while the step computes, since Open MPI only
     * progresses nonblocking collectives inside MPI calls. */
    void (*progress)(void *ctx);
    void *progress_ctx;
} model_t;

/* Model names: mlp, lenet5, cifar10_quick, resnet20. Returns 0, or -1 with err set
 * (unknown name, out of memory). */
int model_create(const char *name, int max_batch, model_t **out, char *err, size_t errlen);
void model_free(model_t *m);
/* Whether name is a known model; fills the input shape it expects. */
int model_input_shape(const char *name, int *C, int *H, int *W);

/* PyTorch's default initialisation (uniform +-1/sqrt(fan_in) for weights and biases of
 * conv and fc; Kaiming normal for resnet20 convolutions; bn gamma 1, beta 0, running
 * mean 0, running var 1), drawn from seed. Zeroes the momentum. */
void model_init_params(model_t *m, uint64_t seed);

/* Forward pass of B <= max_batch samples x (B, C, H, W). train selects batch-norm mode
 * (and running-stat updates). Returns the mean cross-entropy loss against y; the logits
 * are model_logits(m). */
float model_forward(model_t *m, const float *x, const int32_t *y, int B, int train);
/* Backward pass after a training forward on the same x, y, B: writes the gradient of
 * loss_scale * mean loss into m->grads (every tensor written, nothing accumulated). */
void model_backward(model_t *m, const float *x, const int32_t *y, int B, float loss_scale);
const float *model_logits(const model_t *m);

/* Number of trainable parameters (for --help and tests). */
size_t model_param_count(const model_t *m);

#endif
