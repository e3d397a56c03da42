/* common/jsonbody.c - see jsonbody.h. */
#include "jsonbody.h"

#include <string.h>
#include <strings.h>

#include "errmsg.h"

/* jansson reads NaN, Infinity and -Infinity as an invalid token whose text starts so. */
static int non_finite(const char *text)
{
    const char *near = strstr(text, "near '");
    if (!near) return 0;
    near += 6;
    if (*near == '-' || *near == '+') near++;
    return strncasecmp(near, "nan", 3) == 0 || strncasecmp(near, "inf", 3) == 0;
}

const char *jsonbody_text(json_error_t *je)
{
    errmsg_one_line(je->text, sizeof je->text);
    return je->text;
}

static int error_of(const json_error_t *je, const char *what, char *err, size_t errlen)
{
    const int line = je->line, col = je->column, pos = je->position;
    switch (json_error_code(je)) {
    case json_error_invalid_utf8:
        return errmsg(err, errlen, "%s: not UTF-8 at byte %d (line %d column %d; JSON text is UTF-8): %s", what, pos,
                      line, col, je->text);
    case json_error_duplicate_key:
        return errmsg(err, errlen, "%s: a key given twice at line %d column %d (give each key once): %s", what, line,
                      col, je->text);
    case json_error_numeric_overflow:
        return errmsg(err, errlen, "%s: a number out of range at line %d column %d: %s", what, line, col, je->text);
    default: break;
    }
    if (strncmp(je->text, "invalid Unicode", 15) == 0)
        return errmsg(err, errlen,
                      "%s: a lone surrogate at line %d column %d (\\uD800-\\uDFFF escapes come as a high-low "
                      "pair, or not at all): %s",
                      what, line, col, je->text);
    if (strncmp(je->text, "invalid escape", 14) == 0)
        return errmsg(err, errlen,
                      "%s: an invalid escape at line %d column %d (JSON has \\\" \\\\ \\/ \\b \\f \\n \\r "
                      "\\t and \\uXXXX): %s",
                      what, line, col, je->text);
    if (non_finite(je->text))
        return errmsg(err, errlen, "%s: NaN and Infinity are not JSON numbers (line %d column %d): %s", what, line, col,
                      je->text);
    return errmsg(err, errlen, "%s: invalid JSON at line %d column %d: %s", what, line, col, je->text);
}

int jsonbody_error(const json_error_t *je, const char *what, char *err, size_t errlen)
{
    error_of(je, what, err, errlen);
    errmsg_one_line(err, errlen);
    return -1;
}
