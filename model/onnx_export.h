/* model/onnx_export.h - a trained model back as ONNX: the graph it was imported from
 * (model/onnx_import.h), in inference form, with the trained weights.
 *
 * The source file's own graph is kept, node for node, with two changes that make it the
 * inference graph a deployment stack (onnxruntime, TensorRT) expects: a batch norm exported
 * in training form (extra outputs, training_mode) gives only its normalised output, which
 * ONNX then computes from the running statistics; a Dropout becomes an Identity. Every
 * initializer the model trained (parameters and batch-norm running statistics, under
 * their own names: PyTorch's state_dict keys) holds the trained values; every other
 * initializer, the opset and the metadata are the file's.
 *
 * A built-in network has no source graph: onnx_export_layers writes one from its layer list
 * (opset ONNX_EXPORT_OPSET, inference form): Conv, MaxPool, AveragePool, Relu, LeakyRelu,
 * Sigmoid, Tanh, GlobalAveragePool, Concat, BatchNormalization (running statistics),
 * Flatten + Gemm for a fully connected layer, Add for a residual (the option-A shortcut
 * of resnet20 as a 1x1 MaxPool of the stride and a Pad of the channels), Identity for a
 * dropout. Initializers are the model's tensors under their names, which for the built-in
 * networks are what the same network in PyTorch has as state_dict keys (conv1.weight,
 * conv1.bias, fc1.weight, bn1.weight, bn1.bias, bn1.running_mean, bn1.running_var,
 * layer2.0.conv1.weight; no num_batches_tracked), in the model's order. The graph's input
 * is "input" (batch, C, H, W), its output "logits" (batch, classes), the batch dynamic.
 * The built-in GPT's (model/gpt.h): input int64 token ids (batch, block), output logits
 * (batch, block, vocab); Gather for the embedding, Mul, Where of a causal mask and Softmax
 * for the causal softmax (the form the importer reads back as one), the tied head a MatMul
 * by the Transpose of the embedding's one initializer.
 */
#ifndef PACER_ONNX_EXPORT_H
#define PACER_ONNX_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* The ONNX bytes of src (len bytes, what m was imported from) with m's weights, malloc'ed
 * into *out (the caller frees it). Returns 0, or -1 with err set (src does not decode, or
 * is not the graph m was imported from: an initializer missing or of another size). */
int onnx_export_buffer(const uint8_t *src, size_t len, const model_t *m, uint8_t **out, size_t *outlen, char *err,
                       size_t errlen);
#define ONNX_EXPORT_OPSET 13

/* The ONNX bytes of m's layer list with m's weights (see above), malloc'ed into *out. 0,
 * or -1 with err set (a layer ONNX 13 cannot express, out of memory). */
int onnx_export_layers(const model_t *m, uint8_t **out, size_t *outlen, char *err, size_t errlen);
/* The same (onnx_export_buffer from the file src_path, or onnx_export_layers when src_path
 * is NULL or empty) into the file out_path (written whole or not at all). */
int onnx_export_file(const char *src_path, const model_t *m, const char *out_path, char *err, size_t errlen);
/* The same from the source file's len bytes in memory (an uploaded model's, which the
 * worker may have read from Redis: worker/modelfetch.h). */
int onnx_export_to_file(const uint8_t *src, size_t len, const model_t *m, const char *out_path, char *err,
                        size_t errlen);
/* Whether the exporter has a translation for kind k (1: an entry of its own, or the shared
 * one of a PLAIN row of op_table.h) or not (0). Every kind whose operator-table row names an
 * ONNX operator (onnx_export) has one, and no other (test_op_table checks both): an empty
 * column is how a row says "not exported". */
int onnx_export_has_kind(layer_kind_t k);

#endif
