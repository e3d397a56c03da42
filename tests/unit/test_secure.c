/* tests/unit/test_secure.c - issue 13, "Secrets and the public API" and "Admission and
 * exhaustion": the pure parts and the small file-system ones. The same fixes driven
 * through a real coordinator and real workers are tests/integration/hardening_secrets.sh
 * and hardening_admission.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_util.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch.h"

/* ---- durable files ------------------------------------------------------------------------
 * fsync is interposed: the coordinator's objects are linked into this executable, so their
 * calls land here first. Each call is counted by what it syncs (a file or a directory). */

static int g_fsync_files, g_fsync_dirs;

int fsync(int fd)
{
    struct stat st;
    if (fstat(fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) g_fsync_dirs++;
        else if (S_ISREG(st.st_mode)) g_fsync_files++;
    }
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return real ? real(fd) : 0;
}

static void test_write_file_atomic_durable(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-secure-XXXXXX", path[128], tmp[160];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/spec.json", dir);
    g_fsync_files = g_fsync_dirs = 0;
    assert_int_equal(write_file_atomic(path, "{\"a\":1}", 7), 0);
    /* the data before the rename, the directory after it */
    assert_true(g_fsync_files >= 1);
    assert_true(g_fsync_dirs >= 1);
    FILE *f = fopen(path, "r");
    char buf[32] = "";
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "{\"a\":1}");

    /* A secret is created 0600 whatever the umask, even over a stale world-readable
     * temporary file a crash left behind. */
    snprintf(tmp, sizeof tmp, "%s/secret.tmp", dir);
    f = fopen(tmp, "w");
    assert_non_null(f);
    fclose(f);
    chmod(tmp, 0666);
    snprintf(path, sizeof path, "%s/secret", dir);
    mode_t old = umask(0);
    g_fsync_files = g_fsync_dirs = 0;
    assert_int_equal(write_file_atomic_mode(path, "pw", 2, 0600), 0);
    umask(old);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_true(g_fsync_files >= 1 && g_fsync_dirs >= 1);
    assert_int_equal(access(tmp, F_OK), -1);
    rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_file_atomic_durable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
