/* common/textbuf.h - a text that grows as printf appends to it, for documents built after
 * the fact (the Prometheus exposition, a Chrome trace), never inside a training step. */
#ifndef PACER_TEXTBUF_H
#define PACER_TEXTBUF_H

#include <stddef.h>

typedef struct {
    char *p;    /* NUL-terminated once anything was appended; the caller frees it */
    size_t len; /* bytes before the NUL */
    size_t cap;
    int oom; /* an allocation failed: later appends do nothing; free p and give up */
} textbuf_t;

/* Appends the formatted text, doubling the buffer (from 4 KiB) as needed. */
void textbuf_printf(textbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
