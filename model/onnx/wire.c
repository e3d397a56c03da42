/* model/onnx/wire.c - see wire.h. */
#include "wire.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errmsg.h"
#include "onnx_import.h"
#include "onnx.pb-c.h"
#include "op_table.h"
#include "sha256.h"
#include "import_internal.h"

/* ---- the wire format, before protobuf-c ------------------------------------------------- */

/* protobuf-c's unpack recurses once per nested message and allocates every message and
 * repeated entry the bytes declare before the importer sees a count: a file of nested If
 * subgraphs overflowed its stack, one of empty initializer entries took gigabytes. This
 * walk reads the same bytes with the same descriptors (onnx.pb-c.c), without allocating,
 * and refuses what would go beyond ONNX_MAX_DEPTH, ONNX_MAX_REPEATED or the bytes the
 * decoding may take. A malformed file is left to protobuf-c, which refuses it too. */

/* The largest field number the wire format allows, 2^29 - 1 */
#define WIRE_FIELD_MAX 536870911u

typedef struct {
    size_t bytes, limit; /* what the decoding would allocate (estimated from above), its bound */
    char *err;
    size_t errlen;
} wire_t;

static int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t c = *(*p)++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return *v = r, 0;
    }
    return -1;
}

/* Adds n to the decoding's bytes; WIRE_BOUND with the message beyond the limit. */
static int wire_take(wire_t *w, size_t n)
{
    if (__builtin_add_overflow(w->bytes, n, &w->bytes) || w->bytes > w->limit) {
        snprintf(w->err, w->errlen,
                 "onnx: decoding the file would take more than %s (its messages and entries as declared; the "
                 "bound is %d x its size + 64 MiB, and at most the memory bound)",
                 imp_size_text(w->limit).s, ONNX_MAX_DECODE_FACTOR);
        return WIRE_BOUND;
    }
    return WIRE_OK;
}

/* The elements of a packed repeated scalar field of len bytes. */
static size_t wire_packed_count(const ProtobufCFieldDescriptor *f, const uint8_t *p, size_t len)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT: return len / 4;
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return len / 8;
    default: break;
    }
    size_t n = 0; /* varints: one ends at each byte without the continuation bit */
    for (size_t i = 0; i < len; i++) n += !(p[i] & 0x80);
    return n;
}

static int wire_message(wire_t *w, const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len, int depth)
{
    if (depth > ONNX_MAX_DEPTH) {
        snprintf(w->err, w->errlen,
                 "onnx: %s at nesting level %d: messages nest deeper than the bound of %d (subgraphs of If, Loop or "
                 "Scan inside each other?)",
                 d->short_name, depth, ONNX_MAX_DEPTH);
        return WIRE_BOUND;
    }
    int rc = wire_take(w, d->sizeof_message);
    /* entries of each repeated field of this message, by field index, and unknown fields */
    uint32_t counts[64] = {0}, unknown = 0;
    const uint8_t *end = p + len;
    while (rc == WIRE_OK && p < end) {
        uint64_t tag, v;
        if (wire_varint(&p, end, &tag) != 0) return WIRE_MALFORMED;
        const unsigned wt = (unsigned)(tag & 7);
        const uint64_t num = tag >> 3;
        /* protobuf-c refuses a tag byte of 0 but decodes 0 spelt long (80 80 00) as field 0,
         * an unknown field it writes back as 00, which it then refuses: an export that does
         * not import (fuzz_onnx's finding) */
        if (num == 0 || num > WIRE_FIELD_MAX) {
            snprintf(w->err, w->errlen,
                     "onnx: not an ONNX model: %s holds a field numbered %llu (the protobuf wire format numbers "
                     "fields from 1 to %u)",
                     d->short_name, (unsigned long long)num, (unsigned)WIRE_FIELD_MAX);
            return WIRE_INVALID;
        }
        const ProtobufCFieldDescriptor *f = num <= UINT32_MAX
                                                ? protobuf_c_message_descriptor_get_field(d, (unsigned)num)
                                                : NULL;
        const uint8_t *body = p;
        size_t blen = 0;
        switch (wt) {
        case 0:
            if (wire_varint(&p, end, &v) != 0) return WIRE_MALFORMED;
            break;
        case 1:
        case 5:
            if ((size_t)(end - p) < (wt == 1 ? 8u : 4u)) return WIRE_MALFORMED;
            p += wt == 1 ? 8 : 4;
            break;
        case 2:
            if (wire_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p)) return WIRE_MALFORMED;
            body = p;
            blen = (size_t)v;
            p += blen;
            break;
        default: return WIRE_MALFORMED; /* groups: not in onnx.proto */
        }
        blen = wt == 2 ? blen : (size_t)(p - body);
        if (!f) {
            /* kept by protobuf-c as an unknown field: its record and a copy of its bytes */
            if (++unknown > ONNX_MAX_REPEATED) {
                snprintf(w->err, w->errlen, "onnx: %s: more than %d unknown fields (the bound)", d->short_name,
                         ONNX_MAX_REPEATED);
                return WIRE_BOUND;
            }
            rc = wire_take(w, sizeof(ProtobufCMessageUnknownField) + blen);
            continue;
        }
        const size_t fi = (size_t)(f - d->fields);
        const int repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
        const int scalar = f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING &&
                           f->type != PROTOBUF_C_TYPE_BYTES;
        if (repeated && scalar) {
            /* packed or one by one: at most 8 bytes an element, bounded by the file's bytes */
            size_t n = wt == 2 ? wire_packed_count(f, body, blen) : 1;
            rc = wire_take(w, n * 8);
            continue;
        }
        if (repeated && fi < 64 && ++counts[fi] > ONNX_MAX_REPEATED) {
            snprintf(w->err, w->errlen, "onnx: %s.%s: more than %d entries (the bound)", d->short_name, f->name,
                     ONNX_MAX_REPEATED);
            return WIRE_BOUND;
        }
        if (wt != 2) continue; /* a mismatched wire type: protobuf-c refuses the file */
        rc = wire_take(w, (repeated ? sizeof(void *) + sizeof(ProtobufCBinaryData) : 0) + blen + 1);
        if (rc == WIRE_OK && f->type == PROTOBUF_C_TYPE_MESSAGE)
            rc = wire_message(w, f->descriptor, body, blen, depth + 1);
    }
    return rc;
}

/* The walk over a ModelProto of len bytes: WIRE_OK, WIRE_MALFORMED, or WIRE_BOUND with err. */
int wire_check(const uint8_t *data, size_t len, size_t bound, char *err, size_t errlen)
{
    size_t limit = (size_t)ONNX_MAX_DECODE_FACTOR * len + ((size_t)64 << 20);
    wire_t w = {.limit = limit < bound ? limit : bound, .err = err, .errlen = errlen};
    return wire_message(&w, &onnx__model_proto__descriptor, data, len, 0);
}
