/* common/fs.h - file-system helpers the worker (checkpoint directories) and the coordinator
 * (its state directory, jobs' checkpoint directories) both need. */
#ifndef PACER_FS_H
#define PACER_FS_H

#include <stddef.h>

/* mkdir -p: creates path and its missing parents with mode (existing ones are fine).
 * Returns 0, or -1 with errno set (ENAMETOOLONG beyond 4095 bytes, ENOTDIR when path
 * exists and is not a directory). */
int fs_mkdir_p(const char *path, unsigned mode);

/* rm -r: removes path and everything under it, never following a symbolic link (a link
 * is removed, not what it points to). A missing path is fine. Returns 0, or -1 with
 * errno set by the first failure. */
int fs_remove_tree(const char *path);

/* Writing a file atomically: readers see the old file or the complete new one, never a
 * part. fs_atomic_begin creates a new temporary file beside path (same directory, so the
 * rename stays within one file system), named path.tmp.PID.N, with mode, and returns its
 * descriptor (or -1 with errno); tmp receives its name. The caller writes (or ftruncates
 * and maps) it, then fs_atomic_commit makes it durable (fsync), renames it over path and
 * syncs the directory, or fs_atomic_abort removes it. Both close fd. commit returns 0,
 * or -1 with errno (the temporary file is then removed). */
int fs_atomic_begin(const char *path, char *tmp, size_t tmplen, unsigned mode);
int fs_atomic_commit(int fd, const char *tmp, const char *path);
void fs_atomic_abort(int fd, const char *tmp);
/* Makes the renames and links in dir durable (fsync of the directory; best effort). */
void fs_sync_dir(const char *dir);
/* rename(2) of from over to, then the directory that holds to made durable (fs_sync_dir):
 * every rename of the code base goes through here or fs_atomic_commit, so that none is
 * left to a crash's luck. 0, or -1 with errno from rename (nothing changed). */
int fs_rename(const char *from, const char *to);
/* The three in one for len bytes in memory: path holds data whole, or is left as it was.
 * 0, or -1 with errno. This is the one temp-file-and-rename writer: the worker's
 * checkpoints, summaries and traces and the exported ONNX use it (several processes may
 * write one path: each has its own temporary name; fs_atomic_sweep removes a dead one's). */
int fs_atomic_write(const char *path, const void *data, size_t len, unsigned mode);
/* The same through the fixed temporary name path.tmp, which the next write replaces (the
 * unlink before an O_EXCL create: a stale file's mode never carries over). For files with
 * one writer whose crash leftovers must not pile up: the coordinator's state (specs, pid
 * and handle files, hostfiles, Slurm scripts, secrets at 0600, the model store, whose start
 * removes *.tmp). */
int fs_atomic_write_fixed(const char *path, const void *data, size_t len, unsigned mode);
/* write(2) until len bytes are written (EINTR retried). 0, or -1 with errno (EIO when
 * write wrote nothing). */
int fs_write_all(int fd, const void *data, size_t len);
/* read(2) until len bytes are read (EINTR retried). 0, or -1 with errno (EIO when the
 * file ends first: it was shorter than its caller was told). */
int fs_read_all(int fd, void *data, size_t len);

/* Removes the temporary files of fs_atomic_begin left in dir by processes that died before
 * they committed or aborted (a worker killed while it built a 4.7 GB data cache left its
 * PATH.tmp.PID.N behind): every regular file named PREFIX*.tmp.PID.N whose PID
 * is not a live process of this host (kill(PID, 0) fails with ESRCH). A live PID's file
 * is kept, as it may be a build under way (the folder may be shared by several daemons
 * and hand-run workers of one host; a PID reused since is only a late removal). prefix
 * NULL or "" matches every name. removed, when not NULL, is called with each removed
 * file's path and size. Returns the number removed, or -1 with errno when dir cannot be
 * listed (a missing dir is 0). */
int fs_atomic_sweep(const char *dir, const char *prefix, void (*removed)(const char *path, long long bytes, void *ctx),
                    void *ctx);

#endif
