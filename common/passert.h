/* common/passert.h - broken invariants, as Redis's serverAssert and serverPanic: one way to
 * say that something that cannot happen did, and stop. PACER_ASSERT(cond, fmt, ...) prints
 * the reason (printf), then the expression, file and line, to stderr and aborts when cond
 * is false; PACER_PANIC(fmt, ...) does the same without a condition (a state the process
 * cannot go on from, e.g. a device lost mid-step: the launcher restarts from a checkpoint).
 *
 * Never for input from outside (a spec, a request, a file): that gets an error naming what
 * is wrong (common/errmsg.h), and the coordinator never stops for it. Nothing is allocated
 * on the way out, so they may be used on a training step's path.
 */
#ifndef PACER_PASSERT_H
#define PACER_PASSERT_H

#define PACER_ASSERT(cond, ...) ((cond) ? (void)0 : pacer_assert_fail(__FILE__, __LINE__, #cond, __VA_ARGS__))
#define PACER_PANIC(...) pacer_assert_fail(__FILE__, __LINE__, NULL, __VA_ARGS__)

/* Prints "<reason>\n" and "assertion failed: <expr> (<file>:<line>)\n" (expr NULL: "panic
 * at <file>:<line>") to stderr and aborts. */
_Noreturn void pacer_assert_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
