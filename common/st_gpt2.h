/* common/st_gpt2.h - the built-in GPT's safetensors under Hugging Face GPT-2's names and
 * layout, and the options a safetensors export takes (names, dtype).
 *
 * The built-in GPT carries nanoGPT's state_dict names (transformer.wte.weight,
 * transformer.h.N.attn.c_attn.weight, ..., transformer.ln_f.bias), which are GPT-2's in
 * Hugging Face transformers too (GPT2LMHeadModel's state_dict). What differs is the layout:
 * nanoGPT's matrix products are nn.Linear, weight [out, in] (y = x W^T + b); Hugging Face
 * GPT-2's are Conv1D, weight [in, out] (y = x W + b). The four products of a block
 * (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) are therefore transposed between the two;
 * everything else (embeddings, layer norms, biases, an untied lm_head.weight, nn.Linear in
 * both) is the same. Hugging Face's tied head is not written (save_pretrained leaves the
 * tied lm_head.weight out, as pacer's nanoGPT export does).
 *
 * Read back, a file is Hugging Face's when its names are GPT2Model's (no "transformer."
 * prefix: h.0.ln_1.weight, wte.weight, as the Hub's gpt2 model.safetensors is written) or
 * when a block's non-square product is in Conv1D's layout (attn.c_attn.weight [E, 3E],
 * mlp.c_fc.weight [E, 4E], mlp.c_proj.weight [4E, E]); its tensors are then renamed to the
 * prefixed names and the four products marked transposed (common/safetensors.h), so that
 * they read as nanoGPT's. Hugging Face's causal-mask buffers (h.N.attn.bias of 4
 * dimensions, h.N.attn.masked_bias) hold no weights and are left out.
 */
#ifndef PACER_ST_GPT2_H
#define PACER_ST_GPT2_H

#include <stddef.h>

#include "safetensors.h"

/* A safetensors export's options: the names (0 the model's own, 1 Hugging Face GPT-2's)
 * and the dtype written (ST_F32 or ST_BF16). */
typedef struct {
    int hf;
    st_dtype_t dtype;
} st_out_t;

/* names ("" or NULL or "nanogpt": the model's own; "hf") and dtype ("" or NULL or "f32";
 * "bf16"; case-insensitive) into *o. 0, or -1 with err naming the value that is not one. */
int st_out_parse(const char *names, const char *dtype, st_out_t *o, char *err, size_t errlen);

/* The n tensors t (nanoGPT's names and layout, as model/st_export.h and the coordinator's
 * JOBDIR/model.safetensors hold them) readied for writing as o says: each tensor's dtype,
 * and with o->hf the four products of each block transposed into Conv1D's layout (their
 * dims swapped, marked transposed; their data untouched). 0, or -1 with err when o->hf and
 * t holds no block's attn.c_attn.weight of 2 dimensions (not the built-in GPT). */
int st_out_apply(st_tensor_t *t, int n, const st_out_t *o, char *err, size_t errlen);

/* A parsed file f turned, when it is Hugging Face GPT-2's (above), into nanoGPT's names and
 * layout in place (names prefixed, the four products' dims swapped and marked transposed,
 * the mask buffers dropped). 1 when it was Hugging Face's, 0 when left as it is, -1 with err
 * (a name too long once prefixed, or two tensors then of one name). */
int st_from_hf(st_file_t *f, char *err, size_t errlen);

/* The safetensors bytes in (len: a file of the model's own names, as JOBDIR/model.safetensors
 * holds them, of any dtype read) written again as o says, malloc'ed into *out. 0; -2 with
 * err when st_out_apply refuses (names hf for a model that is not the built-in GPT); -1
 * with err when the file does not parse or memory runs out. */
int st_convert(const uint8_t *in, size_t len, const st_out_t *o, uint8_t **out, size_t *outlen, char *err,
               size_t errlen);

#endif
