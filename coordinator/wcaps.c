/* coordinator/wcaps.c - see wcaps.h. */
#include "wcaps.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "launch.h"

/* The options asked about, each with the capability it shows. */
static const struct {
    const char *option;
    size_t at; /* offset of the flag in wcaps_t */
} ASKED[] = {
    {"--redis", offsetof(wcaps_t, redis)},
    {"--redis-password-file", offsetof(wcaps_t, password_file)},
    {"--world", offsetof(wcaps_t, world)},
    {"--resume-before", offsetof(wcaps_t, collapse)},
    {"--netprobe", offsetof(wcaps_t, netprobe)},
    {"--data-cache", offsetof(wcaps_t, data_cache)},
    {"--data-root", offsetof(wcaps_t, data_root)},
    {"--model-onnx", offsetof(wcaps_t, model_onnx)},
    {"--fence", offsetof(wcaps_t, fence)},
    {"--adopt-checkpoint", offsetof(wcaps_t, adopt)},
    {"--model-safetensors", offsetof(wcaps_t, model_st)},
};
#define NASKED (sizeof ASKED / sizeof ASKED[0])

#define CAPS_OUT_MAX (1 << 16) /* bound on what either answer may hold */

static void caps_set(wcaps_t *out, size_t i) { *(int *)(void *)((char *)out + ASKED[i].at) = 1; }

int wcaps_from_json(const char *text, wcaps_t *out)
{
    memset(out, 0, sizeof *out);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    json_t *opts = json_object_get(j, "options");
    if (!json_is_array(opts)) {
        json_decref(j);
        return -1;
    }
    size_t k;
    json_t *o;
    json_array_foreach(opts, k, o)
    {
        const char *name = json_string_value(o);
        for (size_t i = 0; name && i < NASKED; i++)
            if (strcmp(name, ASKED[i].option) == 0) caps_set(out, i);
    }
    json_decref(j);
    return 0;
}

/* Whether option stands in help as a whole word: not followed by a letter, digit or '-'. */
static int help_has(const char *help, const char *option)
{
    size_t n = strlen(option);
    for (const char *p = strstr(help, option); p; p = strstr(p + 1, option)) {
        char next = p[n];
        int inside = (next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') || (next >= '0' && next <= '9') ||
                     next == '-' || next == '_';
        if (!inside) return 1;
    }
    return 0;
}

void wcaps_from_help(const char *help, wcaps_t *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; help && i < NASKED; i++)
        if (help_has(help, ASKED[i].option)) caps_set(out, i);
}

int wcaps_probe(const char *path, wcaps_t *out)
{
    char *text = malloc(CAPS_OUT_MAX);
    const char *help[] = {path, "--help", NULL};
    if (text && launch_capture(help, text, CAPS_OUT_MAX, 10.0) != 0) text[0] = 0;
    /* Only a worker whose help names --capabilities is run with it: an older binary
     * might not refuse an unknown option before doing its work. */
    const char *caps[] = {path, "--capabilities", NULL};
    if (text && help_has(text, "--capabilities") && launch_capture(caps, text, CAPS_OUT_MAX, 10.0) == 0 &&
        wcaps_from_json(text, out) == 0) {
        free(text);
        return 1;
    }
    if (text) launch_capture(help, text, CAPS_OUT_MAX, 10.0);
    wcaps_from_help(text, out);
    free(text);
    return 0;
}
