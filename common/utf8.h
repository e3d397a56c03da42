/* common/utf8.h - UTF-8 as RFC 3629 and Unicode's Table 3-7 define it: the one validator
 * of text a model emits (pacer-generate's stream, an evaluation's eval_sample, the worker's
 * records) and of the chars tokenizer's input, so that no two readers disagree on what is
 * valid. Refused: a continuation byte or C0, C1, F5..FF where a character must begin, an
 * overlong form (E0 80..9F, F0 80..8F), a surrogate (ED A0..BF: U+D800..U+DFFF), a value
 * past U+10FFFF (F4 90..BF), a sequence broken by a byte that does not continue it or cut
 * short by the end of the text.
 *
 * JSON must be valid UTF-8 (jansson refuses a string that is not, and a record or a line it
 * refuses is lost): text bound for JSON is cleaned by utf8_sanitize, which replaces each
 * maximal invalid subpart (the longest start of a valid sequence, else one byte) by U+FFFD,
 * as the WHATWG decoder and Python's errors="replace" do. */
#ifndef PACER_UTF8_H
#define PACER_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT "\xef\xbf\xbd" /* U+FFFD, 3 bytes */

/* The character at s (n >= 1 bytes left): its length, 1 to 4, and *cp (not NULL) its code
 * point; or 0 when the bytes at s are not one, *prefix (not NULL) then the length of the
 * valid start of a sequence there (0: s[0] begins none). *prefix == n: the n bytes are a
 * valid sequence cut short by the end (more bytes may complete it). */
size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp, size_t *prefix);

/* Copies in[0..n) into out (cap >= 1 bytes, the NUL included) as valid UTF-8: each valid
 * character as it is, each maximal invalid subpart as U+FFFD. Stops before a character
 * that would not fit whole and, unless final, before a valid sequence cut short by the end
 * of in (its bytes may still come). The bytes of in consumed; out is NUL-terminated. A cap
 * of 3 n + 1 always holds all of in. */
size_t utf8_sanitize(const char *in, size_t n, int final, char *out, size_t cap);

#endif
