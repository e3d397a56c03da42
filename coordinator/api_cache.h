/* coordinator/api_cache.h - the parse caches behind coord_get (GET /api/v1/jobs/{id}, the
 * API's hottest call): a job's spec and the worker's summary file, parsed once and shared
 * by reference (jansson allows concurrent reads of a value nobody modifies), so callers
 * must not modify what these return. Process-wide and thread-safe. api_cache.c says when
 * an entry is used and when it is dropped. */
#ifndef PACER_API_CACHE_H
#define PACER_API_CACHE_H

#include <jansson.h>

/* The job's parsed spec for its stored text (a new reference, shared), or NULL when text
 * is not JSON. An entry is used only for exactly the text it was parsed from. */
json_t *api_cache_spec(const char *id, const char *text);
/* Enters spec as the parsed form of text (a reference is taken): the submit path, which
 * has the document it printed the text from. Texts over 64 KiB are not cached. */
void api_cache_spec_put(const char *id, const char *text, json_t *spec);

/* The job's summary file at path (a new reference, shared when final) or NULL when it is
 * missing, too large or not JSON. final: the job is SUCCEEDED, FAILED or CANCELLED in
 * Redis (only a final job's summary is cached). */
json_t *api_cache_summary(const char *path, int final);

#endif
