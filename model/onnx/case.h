/* model/onnx/case.h - the conformance-case reader (model/onnx/case.c). */
#ifndef PACER_MODEL_ONNX_CASE_H
#define PACER_MODEL_ONNX_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* ---- conformance cases (pacer-worker --onnx-case, worker/onnx_case.c) ----
 * A case of ONNX's backend tests is a model.onnx whose graph inputs are all given as
 * TensorProto files (input_K.pb, with the expected output_K.pb). */

/* Largest TensorProto file read, and most bound graph inputs of one case. */
#define ONNX_CASE_TENSOR_MAX_BYTES ((size_t)256 << 20)
#define ONNX_CASE_MAX_TENSORS 16

/* A float32 or int64 tensor: dims[0..ndims), count elements of data (float32) or of ints
 * (int64; data then NULL), malloc'ed, the holder's. */
typedef struct {
    char name[128];
    int ndims;
    int64_t dims[8];
    size_t count;
    float *data;
    int64_t *ints;
} onnx_tensor_t;

/* Decodes the TensorProto in len bytes (at most ONNX_CASE_TENSOR_MAX_BYTES): float32 or
 * int64 (a case's shape arguments, which onnx_import_case binds as constants); another
 * type is refused by name: "data type INT32 (6): ...". 0, or -1 with err set (without a
 * prefix: the caller names the file). */
int onnx_tensor_decode(const uint8_t *data, size_t len, onnx_tensor_t *out, char *err, size_t errlen);
void onnx_tensor_free(onnx_tensor_t *t);

/* The distinct operators of the graph in len bytes, in first-use order, comma-separated
 * into out (cut at outlen). 0, or -1 when the bytes are not an ONNX model. */
int onnx_graph_ops(const uint8_t *data, size_t len, char *out, size_t outlen);

/* Imports a case's model as onnx_import_buffer does, with two differences: the graph
 * inputs after the first that no initializer fills are bound, in order, to bound[0..nbound)
 * (their weights as constants; an int64 one a constant that shape arguments fold, and that
 * a layer reading floats refuses by its type), and the output may also be (N, C, H, W): the model's
 * logits are then its C*H*W values per sample, in that order. 0, or -1 with err set
 * (everything onnx_import_buffer refuses, or a count of inputs that does not match). */
int onnx_import_case(const uint8_t *data, size_t len, const onnx_tensor_t *bound, int nbound, int max_batch,
                     model_t **out, char *err, size_t errlen);
/* The same with every input, for the graph's output `output` alone (its index; the model's
 * output is a copy of it where it is no layer's, or not the last: an Identity, one of a
 * Split's outputs; a batch norm's running statistic in training form is read as its Y:
 * onnx_case_training): in[0] the activation, in[1..nin) the graph's other inputs in order;
 * those that are activations like in[0] (its rank and batch, float32, not read as a weight;
 * opset 10 on) are fed with it, packed[k] set to 1 for them (packed[0] too) and 0 for the
 * inputs bound as constants: the model's input is then (N, S), each sample the packed
 * inputs' samples one after the other (in order, their elements flat).
 * A case refused so (an operator on the graph's axis 0, which is the batch here; an input of
 * rank 0) is read again as one sample of fixed shape (model/onnx/unit.h): every float
 * input not read as a weight is then fed, whole, each after the other, as the one sample
 * (1, S) of a model of batch 1, and *whole is set to 1 (else 0); a node that cannot be
 * read so leaves the first refusal's message. */
int onnx_import_case_inputs(const uint8_t *data, size_t len, const onnx_tensor_t *in, int nin, int max_batch,
                            int output, int *packed, int *whole, model_t **out, char *err, size_t errlen);

/* Whether the case's graph computes BatchNormalization's training form (training_mode 1;
 * is_test 0 below opset 7; more than one output in opsets 7 to 13), whose forward uses the
 * batch's statistics: 1 when it does, the forward then to run in training mode, else 0
 * (also for a model the import refuses, which says why). *stat: 1 or 2 when graph output
 * `output` is such a node's running mean or variance (shape (C)), which
 * onnx_import_case_inputs reads as the node's Y (a graph output: the model's last layer is
 * that LAYER_BN), else 0. */
int onnx_case_training(const uint8_t *data, size_t len, int output, int *stat);

#endif
