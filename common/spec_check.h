/* common/spec_check.h - what a parsed job spec must hold together, and what is asked of
 * one: the cross-field checks that spec.c's parser runs once every field is read (an
 * algorithm's workers, a GPT on a text data set, compression, growth, sharding, precision,
 * lora, simulation...), the queries spec.h declares (the data set's format, whether the
 * model is a GPT, the worlds a job runs in, the optimizer's betas, warnings, the profile
 * device), and the one-line error both write. Shared by spec.c and spec_check.c only. */
#ifndef PACER_SPEC_CHECK_H
#define PACER_SPEC_CHECK_H

#include <stddef.h>

#include "spec.h"

/* The caller's error buffer. */
typedef struct errbuf {
    char *buf;
    size_t len;
} errbuf_t;

/* Writes one line into e and returns -1. Control characters (a key or value from the
 * document may hold "\n") become '?', so the message stays one line in a log or an HTTP
 * error body. */
__attribute__((format(printf, 2, 3))) int spec_fail(errbuf_t *e, const char *fmt, ...);
/* Whether s is one of list's strings (NULL-terminated). */
int spec_in_list(const char *s, const char *const *list);
/* x as the docs and messages print a number, into buf. */
const char *spec_fmt_num(char buf[32], double x);
/* The cross-field checks of a spec whose every field was read: 0, or -1 with e naming the
 * fields that disagree. */
int spec_cross_check(errbuf_t *e, const job_spec_t *s);

#endif
