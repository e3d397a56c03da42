/* model/model.h - the networks pacer trains, as a list of layers over fused buffers.
 *
 * Which networks exist, their input shape and classes, is the catalog's
 * (common/catalog.h); model/ keeps the builder of each built-in network, by name, and
 * describes a built model back to the catalog (model_describe).
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

#include "catalog.h"
#include "ops.h"

/* The layer and tensor lists are sized by the builder (they grow while it runs), so a
 * network has as many layers as it needs; these bound a list against a runaway graph. */
#define MODEL_MAX_LAYERS 65536
#define MODEL_MAX_TENSORS 65536
#define MODEL_NAME_MAX CATALOG_NAME_MAX /* the model's name: a catalog name */
/* A tensor's name, PyTorch's state_dict key: "layer3.1.bn2.running_var",
 * "features.denseblock4.denselayer16.conv2.weight". */
#define MODEL_TENSOR_NAME_MAX 128
/* grads has this many spare floats after the last gradient, so an algorithm can append
 * [batch, batch * loss, batch * |g|^2, 1 if batch > 0] (the last two for the gradient
 * noise scale, common/gns.h) and send gradients and weights in ONE fused message.
 * common/memest.c counts them (it cannot include this header): change both, and
 * PACER_CUDA_ABI (the CUDA library sizes its grads buffers by it). */
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
    char name[MODEL_TENSOR_NAME_MAX]; /* "conv1.weight" */
    size_t offset, count;             /* into params (or buffers when is_buffer) */
    int is_buffer;
} tensor_info_t;

typedef struct {
    char name[MODEL_NAME_MAX];
    int C, H, W, num_classes; /* input and output of the network (the catalog's) */
    int max_batch;
    int kaiming_conv; /* init: convolutions Kaiming normal (resnet20), else uniform */

    layer_t *layers; /* (nlayers), allocated by model_create */
    int nlayers;
    tensor_info_t *tensors; /* (ntensors) */
    int ntensors;

    size_t nparams;  /* floats in params, grads and momentum */
    size_t nbuffers; /* floats in buffers */
    float *params;   /* fused parameters */
    float *grads;    /* fused gradients, same offsets, + MODEL_GRAD_EXTRA */
    float *momentum; /* optimizer state, same offsets */
    float *buffers;  /* bn running stats */

    size_t act_floats;  /* per arena */
    size_t aux_floats;  /* bn saved statistics */
    size_t argmax_ints; /* maxpool argmax */
    float *acts;        /* every layer's output */
    float *dacts;       /* gradient of every layer's output */
    float *aux;         /* bn saved statistics */
    int32_t *argmax;    /* maxpool argmax */
    float *ws;          /* conv workspace */
    size_t ws_floats;
    float *probs;  /* (max_batch, num_classes) softmax of the logits */
    float *dinput; /* NULL: the input gradient is never needed */

    /* Called between layers in forward and backward when set: lets an algorithm drive a
     * nonblocking MPI collective (MPI_Test) while the step computes, since Open MPI only
     * progresses nonblocking collectives inside MPI calls. */
    void (*progress)(void *ctx);
    void *progress_ctx;
} model_t;

/* Builds the catalog's model name (its input shape and classes from the catalog, its
 * layers from model/'s builder of that name) for batches of up to max_batch. Returns 0,
 * or -1 with err set (not in the catalog, no builder for it, out of memory). */
int model_create(const char *name, int max_batch, model_t **out, char *err, size_t errlen);
/* A model with src's name, layer and tensor lists and sizes, and buffers of its own
 * (zeroed): a twin that never depends on looking the name up again (the stand-in device
 * of tests/fakecuda). Returns 0, or -1 with err set (out of memory). */
int model_clone(const model_t *src, model_t **out, char *err, size_t errlen);
void model_free(model_t *m);

/* The catalog's figures of a built model (common/catalog.h): name, input shape, classes,
 * layers, parameters, buffers, what does not grow with the batch (batch-norm saved
 * statistics and the largest convolution workspace any batch can need), activations and
 * argmax per sample, forward FLOPs per sample. Title, data set and source are left empty
 * (source builtin): the caller's, as who adds an imported model to the catalog knows
 * them. Independent of m->max_batch. */
void model_describe(const model_t *m, catalog_model_t *out);

/* FLOPs of the forward pass of one sample, counted from the layer list: convolutions and
 * fully connected layers 2 per multiply-add, other layers one per input element, the
 * loss 5 per class (the simulator's cost model, sim/cost.c). */
double model_forward_flops(const model_t *m);

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
