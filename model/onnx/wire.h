/* model/onnx/wire.h - the protobuf wire format walked and bounded before protobuf-c decodes it (model/onnx/wire.c; the importer's files only). */
#ifndef PACER_MODEL_ONNX_WIRE_H
#define PACER_MODEL_ONNX_WIRE_H

#include "import_internal.h"

/* wire_check: WIRE_OK, WIRE_MALFORMED (left to protobuf-c), WIRE_BOUND with err set, or
 * WIRE_INVALID with err set (bytes the wire format forbids that protobuf-c would take: not
 * ONNX); bound: the bytes decoding may take at most (the caller's onnx_import_memory_bound) */
enum { WIRE_OK = 0, WIRE_MALFORMED = -1, WIRE_BOUND = -2, WIRE_INVALID = -3 };
int wire_check(const uint8_t *data, size_t len, size_t bound, char *err, size_t errlen);
/* Whether wire_check's answer w refuses the file with err set (WIRE_BOUND, WIRE_INVALID). */
static inline int wire_refused(int w) { return w == WIRE_BOUND || w == WIRE_INVALID; }

#endif
