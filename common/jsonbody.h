/* common/jsonbody.h - what is wrong with a request body that jansson refused, in words a
 * caller can act on: each kind of fault (bytes that are not UTF-8, a key given twice, a lone
 * surrogate or bad \u escape, NaN or Infinity, a number out of range, other syntax) has its
 * own message, with where it is (line, column, byte) and jansson's own text. */
#ifndef PACER_JSONBODY_H
#define PACER_JSONBODY_H

#include <jansson.h>
#include <stddef.h>

/* The message for je into err, starting with what ("body"), on one line: returns -1. */
int jsonbody_error(const json_error_t *je, const char *what, char *err, size_t errlen);

/* jansson's own text of je, on one line: it quotes the bytes near the fault, which may hold
 * a newline or other control characters of the document (an invalid escape before a line
 * break); those become '?' in place. For every message that carries that text. */
const char *jsonbody_text(json_error_t *je);

#endif
