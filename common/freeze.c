/* common/freeze.c - see freeze.h. */
#include "freeze.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

int freeze_parse(const json_t *v, char *out, char *err, size_t errlen)
{
    out[0] = '\0';
    if (!json_is_array(v)) return snprintf(err, errlen, "must be an array of globs over parameter names"), -1;
    size_t n = json_array_size(v), at = 0;
    if (n > FREEZE_MAX_GLOBS) return snprintf(err, errlen, "at most %d globs, has %zu", FREEZE_MAX_GLOBS, n), -1;
    for (size_t i = 0; i < n; i++) {
        const char *g = json_string_value(json_array_get(v, i));
        if (!g) return snprintf(err, errlen, "[%zu]: must be a string (a glob)", i), -1;
        size_t len = strlen(g);
        if (len == 0 || len >= FREEZE_GLOB_MAX)
            return snprintf(err, errlen, "[%zu]: a glob of 1 to %d bytes, has %zu", i, FREEZE_GLOB_MAX - 1, len), -1;
        for (const unsigned char *p = (const unsigned char *)g; *p; p++)
            if (*p < 0x20 || *p == 0x7f) return snprintf(err, errlen, "[%zu]: control characters are refused", i), -1;
        if (at + len + 1 >= FREEZE_TEXT_MAX)
            return snprintf(err, errlen, "the globs together exceed %d bytes", FREEZE_TEXT_MAX - 1), -1;
        if (at) out[at++] = '\n';
        memcpy(out + at, g, len + 1);
        at += len;
    }
    return 0;
}

int freeze_next(const char *text, size_t *at, char *glob)
{
    if (!text[*at]) return 0;
    const char *s = text + *at, *nl = strchr(s, '\n');
    size_t len = nl ? (size_t)(nl - s) : strlen(s);
    if (len >= FREEZE_GLOB_MAX) len = FREEZE_GLOB_MAX - 1; /* freeze_parse's bound: not reached */
    memcpy(glob, s, len);
    glob[len] = '\0';
    *at += (size_t)(nl ? nl - s + 1 : (long)strlen(s));
    return 1;
}

json_t *freeze_json(const char *text)
{
    json_t *arr = json_array();
    char g[FREEZE_GLOB_MAX];
    size_t at = 0;
    while (arr && freeze_next(text, &at, g))
        if (json_array_append_new(arr, json_string(g)) < 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

int freeze_matches(const char *text, const char *name)
{
    char g[FREEZE_GLOB_MAX];
    size_t at = 0;
    while (freeze_next(text, &at, g))
        if (fnmatch(g, name, 0) == 0) return 1;
    return 0;
}
