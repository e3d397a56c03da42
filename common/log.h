/* common/log.h - one timestamped line on stderr, shared by the coordinator's log and the
 * worker's Redis link: "2026-11-21 07:00:00.123 WHO: message". Not for the training
 * step (it formats); the callers are daemons and background threads. */
#ifndef PACER_LOG_H
#define PACER_LOG_H

#include <stdarg.h>

void log_vline(const char *who, const char *fmt, va_list ap);

#endif
