/* fuzz/fuzz_password_file.c - libFuzzer target for the Redis password file reader
 * (pacer-worker --redis-password-file, redis_url_read_password): the input is the file's
 * contents, written to a real file (mode 0600) that the reader opens and reads. Build and
 * run: make fuzz-password_file.
 *
 * Properties beyond no crash / UB (issue 13, "no leak of a secret"):
 *  - accepted exactly when the first line (up to \n or \r) is non-empty, shorter than the
 *    password buffer and has no NUL; the password is that line, NUL-terminated;
 *  - a refusal's message is "--redis-password-file PATH: " and one of the reader's fixed
 *    reasons: it never holds a byte of the file;
 *  - the same contents in a file others may read (0640) are always refused, unread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "redis_url.h"

static char path_private[64], path_shared[64];
static int fd_private = -1, fd_shared = -1;

static const char *const REASONS[] = {
    "empty first line",
    "password too long",
    "contains a NUL byte",
    "others can read it; it must be readable only by its owner (chmod 600)",
};

static int make_file(char *path, size_t len, mode_t mode)
{
    /* tmpfs when there is one: on a disk file system the truncate and write per input
     * cost 50 times the reader itself (380 against 20,000 inputs a second here). */
    const char *dir = getenv("TMPDIR");
    struct stat st;
    if (!dir || !*dir) dir = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(path, len, "%s/pacer-fuzz-pw-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0 || fchmod(fd, mode) != 0) abort();
    return fd;
}

static void cleanup(void)
{
    unlink(path_private);
    unlink(path_shared);
}

static void put(int fd, const uint8_t *data, size_t size)
{
    if (ftruncate(fd, 0) != 0) abort();
    if (size && pwrite(fd, data, size, 0) != (ssize_t)size) abort();
}

static void check_refusal(const char *err, const char *path)
{
    char want[256];
    int ok = 0;
    for (size_t i = 0; i < sizeof REASONS / sizeof REASONS[0] && !ok; i++) {
        snprintf(want, sizeof want, "--redis-password-file %s: %s", path, REASONS[i]);
        ok = strcmp(err, want) == 0;
    }
    if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fd_private < 0) {
        fd_private = make_file(path_private, sizeof path_private, 0600);
        fd_shared = make_file(path_shared, sizeof path_shared, 0640);
        atexit(cleanup);
    }
    redis_url_t u;
    memset(&u, 0x5a, sizeof u);
    char err[512];

    put(fd_private, data, size);
    size_t k = 0;
    while (k < size && data[k] != '\n' && data[k] != '\r') k++;
    int expect_ok = k > 0 && k < sizeof u.password && !memchr(data, 0, k);
    int rc = redis_url_read_password(&u, path_private, err, sizeof err);
    if ((rc == 0) != expect_ok) abort();
    if (rc == 0) {
        if (memcmp(u.password, data, k) != 0 || u.password[k] != 0) abort();
    } else {
        check_refusal(err, path_private);
    }

    put(fd_shared, data, size);
    if (redis_url_read_password(&u, path_shared, err, sizeof err) == 0) abort();
    check_refusal(err, path_shared);
    return 0;
}
