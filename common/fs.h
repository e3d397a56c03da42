/* common/fs.h - file-system helpers the worker (checkpoint directories) and the coordinator
 * (its state directory, jobs' checkpoint directories) both need. */
#ifndef PACER_FS_H
#define PACER_FS_H

/* mkdir -p: creates path and its missing parents with mode (existing ones are fine).
 * Returns 0, or -1 with errno set (ENAMETOOLONG beyond 4095 bytes). */
int fs_mkdir_p(const char *path, unsigned mode);

/* rm -r: removes path and everything under it, never following a symbolic link (a link
 * is removed, not what it points to). A missing path is fine. Returns 0, or -1 with
 * errno set by the first failure. */
int fs_remove_tree(const char *path);

#endif
