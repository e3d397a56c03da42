/* common/freeze.h - the spec's freeze: a list of globs (fnmatch(3), no flags) over parameter
 * names whose tensors take no weight update (worker/init_weights.h, model.h's no_update).
 *
 * The list is held in the spec as one string, the globs separated by '\n' (they may not
 * contain one), so that the spec stays a flat struct: at most FREEZE_MAX_GLOBS globs of
 * 1 to FREEZE_GLOB_MAX - 1 bytes, printable, the whole at most FREEZE_TEXT_MAX - 1 bytes.
 */
#ifndef PACER_FREEZE_H
#define PACER_FREEZE_H

#include <stddef.h>

#include <jansson.h>

#define FREEZE_MAX_GLOBS 64
#define FREEZE_GLOB_MAX 128
#define FREEZE_TEXT_MAX 2048

/* The JSON array v into out (FREEZE_TEXT_MAX bytes). 0, or -1 with err naming the entry
 * (without the field's name, which the caller prefixes). */
int freeze_parse(const json_t *v, char *out, char *err, size_t errlen);
/* The list text back as a JSON array of strings (new reference, NULL when out of memory). */
json_t *freeze_json(const char *text);
/* Whether name matches one of the list's globs. */
int freeze_matches(const char *text, const char *name);
/* Each glob of the list in turn: from *at = 0, copies the next into glob (FREEZE_GLOB_MAX
 * bytes) and returns 1; 0 past the last. */
int freeze_next(const char *text, size_t *at, char *glob);

#endif
