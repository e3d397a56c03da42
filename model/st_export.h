/* model/st_export.h - a model's weights as safetensors (common/safetensors.h), F32.
 *
 * Every tensor of the model (parameters, then buffers such as batch-norm running
 * statistics), under its name (the built-in networks' PyTorch state_dict keys, the built-in
 * GPT's nanoGPT keys; an imported model's initializer names), in the model's order, each
 * once (the built-in GPT's tied head is its token embedding: nanoGPT's lm_head.weight is
 * not repeated). Shapes are those of the ONNX export (model/onnx_export.h): the source
 * graph's initializers for an imported model, the generated graph's for a built-in one, so
 * that torch's load_state_dict takes them; a tensor with no initializer of its element
 * count is written 1-D.
 */
#ifndef PACER_ST_EXPORT_H
#define PACER_ST_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "safetensors.h"
#include "st_gpt2.h"

/* m's tensors as the export writes them (names, shapes, data pointing into m's params and
 * buffers), calloc'ed into *out (the caller frees it), *n of them. 0, or -1 with err. */
int st_model_tensors(const uint8_t *src, size_t len, const model_t *m, st_tensor_t **out, int *n, char *err,
                     size_t errlen);
/* m's weights into out_path, their shapes from the ONNX bytes src (len; what m was imported
 * from), or from m's generated graph when src is NULL, written as o says (common/st_gpt2.h:
 * Hugging Face GPT-2's names and layout, BF16; NULL: the model's names, F32). 0, or -1 with
 * err. */
int st_export_to_file(const uint8_t *src, size_t len, const model_t *m, const st_out_t *o, const char *out_path,
                      char *err, size_t errlen);
/* The same with the source read from src_path (NULL or empty: a built-in model). */
int st_export_file(const char *src_path, const model_t *m, const st_out_t *o, const char *out_path, char *err,
                   size_t errlen);

#endif
