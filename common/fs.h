/* common/fs.h - file-system helpers the worker (checkpoint directories) and the coordinator
 * (its state directory, jobs' checkpoint directories) both need. */
#ifndef PACER_FS_H
#define PACER_FS_H

#include <stddef.h>

/* mkdir -p: creates path and its missing parents with mode (existing ones are fine).
 * Returns 0, or -1 with errno set (ENAMETOOLONG beyond 4095 bytes). */
int fs_mkdir_p(const char *path, unsigned mode);

/* rm -r: removes path and everything under it, never following a symbolic link (a link
 * is removed, not what it points to). A missing path is fine. Returns 0, or -1 with
 * errno set by the first failure. */
int fs_remove_tree(const char *path);

/* Writes len bytes to path whole or not at all: into a temporary file beside it (PATH.tmp.PID),
 * fsync'ed, then renamed over path, so a reader sees the old file or the new one. Returns 0,
 * or -1 with errno set (the temporary file removed). */
int fs_write_file(const char *path, const void *data, size_t len);

#endif
