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
 * Built-in networks have no source graph; exporting them is not implemented yet.
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
/* The same from the file src_path into the file out_path (written whole or not at all). */
int onnx_export_file(const char *src_path, const model_t *m, const char *out_path, char *err, size_t errlen);
/* The same from the source file's len bytes in memory (an uploaded model's, which the
 * worker may have read from Redis: worker/modelfetch.h). */
int onnx_export_to_file(const uint8_t *src, size_t len, const model_t *m, const char *out_path, char *err,
                        size_t errlen);

#endif
