/* model/onnx_import.h - the ONNX importer's entry points (model/onnx/import.c; the
 * conformance-case reader's in model/onnx/case.h): an ONNX model (a ModelProto file, what torch.onnx.export writes)
 * as a pacer model: its graph mapped onto model/'s layer list (the list the built-in
 * networks use), its initializers as the starting weights under their own names.
 *
 * Outside input: the file is bounded (ONNX_MAX_BYTES, node and initializer counts, tensor
 * sizes), and everything pacer cannot train as the file says is refused before any
 * training, with a message naming the node, its operator and what about it is
 * unsupported (and, for an unknown operator, where the list of supported ones is). Nothing is
 * approximated: an attribute the kernels do not implement is refused, never ignored.
 */
#ifndef PACER_ONNX_IMPORT_H
#define PACER_ONNX_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "catalog.h"
#include "model.h"

/* Largest ONNX file read (bytes): weights live inside the file (external data is refused). */
#define ONNX_MAX_BYTES ((size_t)1 << 30)
#define ONNX_MAX_NODES 100000
#define ONNX_MAX_INITIALIZERS 100000
/* Before protobuf-c decodes anything, a walk of the wire format bounds how deep messages
 * nest (a graph inside an If inside a graph ... overflowed protobuf-c's stack), how many
 * entries any repeated message, string or bytes field (and unknown fields) of one message
 * has, and the bytes the decoding would allocate (ONNX_MAX_DECODE_FACTOR x the file's
 * size + 64 MiB, and the memory bound). Real models nest about 8 levels. */
#define ONNX_MAX_DEPTH 32
#define ONNX_MAX_REPEATED 100000
#define ONNX_MAX_DECODE_FACTOR 32

/* The memory one imported model may take (bytes): its decoding and every buffer the model
 * allocates at the batch asked for, computed from the declared shapes and attributes
 * before anything large is allocated; a file beyond it is refused with the number. 0 (the
 * start) means the machine's physical memory. pacer-worker --check-onnx sets it from its
 * --check-memory-mb (the coordinator's memory options). Set it before importing. */
void onnx_import_set_memory_bound(size_t bytes);
size_t onnx_import_memory_bound(void);

/* The operators the importer maps, ", "-separated into buf (cut to len, always
 * terminated): the operator table's import column (model/op_table.h), then the
 * graph-level operators the importer folds or aliases. Returns the length of the whole
 * list (as snprintf does). */
size_t onnx_supported_ops(char *buf, size_t len);

/* The same list whole, as a Markdown table: one row per row of the operator table (the
 * ONNX operators, the layer they become), then one of the graph-level operators, which
 * become no layer of their own. `pacer-worker --list-ops` prints it, and docs/JOB_SPEC.md
 * ("What imports") holds a copy that tests/integration/docs_ops.sh compares with it (make
 * docs-ops rewrites the copy). The refusal of an unknown operator points here rather than
 * listing them: the list outgrew every error buffer it travels through. */
void onnx_print_supported_ops(FILE *f);

/* Builds the model of the ONNX file at path for batches of up to max_batch, named name
 * (a catalog name), weights from the file's initializers. Returns 0, or -1 with err set
 * (unreadable, too large, not ONNX or truncated, an unsupported operator or attribute, a
 * graph that is not one image input (N, C, H, W) -> one logits output (N, classes)). */
int onnx_import_file(const char *path, const char *name, int max_batch, model_t **out, char *err, size_t errlen);
/* The same from len bytes in memory (what the file holds). */
int onnx_import_buffer(const uint8_t *data, size_t len, const char *name, int max_batch, model_t **out, char *err,
                       size_t errlen);

/* The bytes of the file at path (at most ONNX_MAX_BYTES), malloc'ed into *data (the
 * caller frees them). 0, or -1 with err set ("onnx: cannot open PATH: ..."). */
int onnx_read_file(const char *path, uint8_t **data, size_t *len, char *err, size_t errlen);

/* Whether len bytes decode as an ONNX ModelProto with a graph: 0 means "not an ONNX file"
 * (the API's 400), as opposed to a model the importer refuses (422). */
int onnx_is_model(const uint8_t *data, size_t len);

/* The catalog figures (model_describe) of the model in len bytes, named name, source
 * onnx, no title: pacer-worker --check-onnx's summary. 0, or -1 with err set as
 * onnx_import_buffer sets it. */
int onnx_import_describe(const uint8_t *data, size_t len, const char *name, catalog_model_t *out, char *err,
                         size_t errlen);

/* Adds the model in len bytes to the catalog as name, of source (onnx, or uploaded with
 * the bytes' SHA-256), titled title. The bytes are imported whole, so everything
 * onnx_import_buffer refuses is refused here. 0 (also when this process's catalog has the
 * name from the same source already: pacer-sim's ranks), or -1 with err set. */
int onnx_import_catalog_add_buffer(const uint8_t *data, size_t len, const char *name, const char *title,
                                   catalog_source_t source, char *err, size_t errlen);

/* Adds the model of the ONNX file at path to the catalog as name (source onnx, its figures
 * from model_describe, its title the file's base name): the job spec's ONNX loader
 * (spec_set_onnx_loader), which pacer-sim installs (pacer-worker's wraps it). The file is
 * imported whole, so everything onnx_import_file refuses is refused here, before any spec
 * check reads the entry. A sha256 (an uploaded model's) is refused: its bytes are found
 * by pacer-worker. 0, or -1 with err set. */
int onnx_import_catalog_add(const char *path, const char *name, const char *sha256, char *err, size_t errlen);

#include "onnx/case.h"

#endif
