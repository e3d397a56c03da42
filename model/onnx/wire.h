/* model/onnx/wire.h - the protobuf wire format walked and bounded before protobuf-c decodes it (model/onnx/wire.c; the importer's files only). */
#ifndef PACER_MODEL_ONNX_WIRE_H
#define PACER_MODEL_ONNX_WIRE_H

#include "import_internal.h"

/* wire_check: WIRE_OK, WIRE_MALFORMED (left to protobuf-c), or WIRE_BOUND with err set; bound:
 * the bytes decoding may take at most (the caller's onnx_import_memory_bound) */
enum { WIRE_OK = 0, WIRE_MALFORMED = -1, WIRE_BOUND = -2 };
int wire_check(const uint8_t *data, size_t len, size_t bound, char *err, size_t errlen);

#endif
