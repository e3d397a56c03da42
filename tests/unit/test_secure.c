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
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "fs.h"
#include "launch.h"
#include "redis_url.h"

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
    assert_int_equal(fs_atomic_write_fixed(path, "{\"a\":1}", 7, 0644), 0);
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
    assert_int_equal(fs_atomic_write_fixed(path, "pw", 2, 0600), 0);
    umask(old);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_true(g_fsync_files >= 1 && g_fsync_dirs >= 1);
    assert_int_equal(access(tmp, F_OK), -1);
    rm_tree(dir);
}

/* fs_atomic_write, the one temp-file-and-rename writer of the worker (checkpoints,
 * summaries, traces): durable like the fixed-name one, the old file replaced whole, no
 * temporary file left behind; a write that cannot happen leaves the old file as it was. */
static void test_fs_atomic_write(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-secure-XXXXXX", path[128], buf[32] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/a.ckpt", dir);
    assert_int_equal(fs_atomic_write(path, "old", 3, 0644), 0);
    g_fsync_files = g_fsync_dirs = 0;
    assert_int_equal(fs_atomic_write(path, "new!", 4, 0600), 0);
    assert_true(g_fsync_files >= 1 && g_fsync_dirs >= 1);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "new!");
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(fs_atomic_sweep(dir, NULL, NULL, NULL), 0); /* nothing .tmp. is left */
    snprintf(path, sizeof path, "%s/missing/a.ckpt", dir);
    errno = 0;
    assert_int_equal(fs_atomic_write(path, "x", 1, 0644), -1);
    assert_int_equal(errno, ENOENT);
    /* fs_write_all into a closed descriptor: -1 with the reason, not a short count */
    assert_int_equal(fs_write_all(-1, "x", 1), -1);
    assert_int_equal(errno, EBADF);
    rm_tree(dir);
}

/* ---- the Redis password ------------------------------------------------------------------ */

static void test_redis_url_redact(void **state)
{
    (void)state;
    char out[256];
    redis_url_redact("redis://:s3cret@db.example:6380/2", out, sizeof out);
    assert_string_equal(out, "redis://:***@db.example:6380/2");
    redis_url_redact("redis://app:s3cret@db", out, sizeof out);
    assert_string_equal(out, "redis://app:***@db");
    redis_url_redact("redis://s3cret@db", out, sizeof out); /* no user: it is all password */
    assert_string_equal(out, "redis://:***@db");
    redis_url_redact("redis://:p@ss@w0rd@db/1", out, sizeof out); /* '@' inside the password */
    assert_string_equal(out, "redis://:***@db/1");
    redis_url_redact("redis://db:6379", out, sizeof out);
    assert_string_equal(out, "redis://db:6379");
    redis_url_redact("unix:///var/run/redis.sock?db=1", out, sizeof out);
    assert_string_equal(out, "unix:///var/run/redis.sock?db=1");
    redis_url_redact(NULL, out, sizeof out);
    assert_string_equal(out, "");

    redis_url_strip_password("redis://app:s3cret@db:6380/2", out, sizeof out);
    assert_string_equal(out, "redis://db:6380/2");
    redis_url_strip_password("redis://db", out, sizeof out);
    assert_string_equal(out, "redis://db");

    /* Parse errors name the URL masked (they go to logs and API answers). */
    redis_url_t u;
    char err[256];
    assert_int_equal(redis_url_parse("redis://:s3cret@db:99999", &u, err, sizeof err), -1);
    assert_null(strstr(err, "s3cret"));
    assert_non_null(strstr(err, "redis://:***@db:99999"));
    assert_int_equal(redis_url_parse("redis://:p@ss@db:7000/3", &u, err, sizeof err), 0);
    assert_string_equal(u.password, "p@ss");
    assert_string_equal(u.host, "db");
    assert_int_equal(u.port, 7000);
}

static void test_redis_password_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-secure-XXXXXX", path[128], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/pw", dir);
    redis_url_t u;
    assert_int_equal(redis_url_parse("redis://db", &u, err, sizeof err), 0);
    assert_int_equal(fs_atomic_write_fixed(path, "s3cret\n", 7, 0600), 0);
    assert_int_equal(redis_url_read_password(&u, path, err, sizeof err), 0);
    assert_string_equal(u.password, "s3cret");
    /* readable by others: refused, and the message does not show the password */
    chmod(path, 0644);
    memset(u.password, 0, sizeof u.password);
    assert_int_equal(redis_url_read_password(&u, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "chmod 600"));
    assert_null(strstr(err, "s3cret"));
    assert_string_equal(u.password, "");
    assert_int_equal(fs_atomic_write_fixed(path, "\nx", 2, 0400), 0);
    assert_int_equal(redis_url_read_password(&u, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "empty"));
    assert_int_equal(redis_url_read_password(&u, dir, err, sizeof err), -1); /* a directory */
    snprintf(path, sizeof path, "%s/missing", dir);
    assert_int_equal(redis_url_read_password(&u, path, err, sizeof err), -1);
    rm_tree(dir);
}

/* ---- job history retention: a job directory goes, never what a link in it points to ----- */

static void test_remove_tree_keeps_link_targets(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-secure-XXXXXX", p[256];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/outside", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/outside/keep", dir);
    assert_int_equal(fs_atomic_write_fixed(p, "x", 1, 0644), 0);
    snprintf(p, sizeof p, "%s/job/checkpoints/deep", dir);
    assert_int_equal(fs_mkdir_p(p, 0755), 0);
    snprintf(p, sizeof p, "%s/job/checkpoints/deep/a.ckpt", dir);
    assert_int_equal(fs_atomic_write_fixed(p, "y", 1, 0644), 0);
    char target[256], link[256];
    snprintf(target, sizeof target, "%s/outside", dir);
    snprintf(link, sizeof link, "%s/job/evil", dir);
    assert_int_equal(symlink(target, link), 0);
    snprintf(p, sizeof p, "%s/job", dir);
    assert_int_equal(fs_remove_tree(p), 0);
    struct stat st;
    assert_int_equal(lstat(p, &st), -1);
    snprintf(p, sizeof p, "%s/outside/keep", dir);
    assert_int_equal(stat(p, &st), 0); /* the link went, not its target */
    snprintf(p, sizeof p, "%s/job", dir);
    assert_int_equal(fs_remove_tree(p), 0); /* already gone: fine */
    rm_tree(dir);
}

/* ---- DNS rebinding: the Host header -------------------------------------------------------- */

static void test_host_header(void **state)
{
    (void)state;
    char h[AUTH_HOST_MAX + 1];
    assert_int_equal(auth_host_header_parse("localhost:8080", h, sizeof h), 0);
    assert_string_equal(h, "localhost");
    assert_int_equal(auth_host_header_parse("LocalHost.", h, sizeof h), 0);
    assert_string_equal(h, "localhost");
    assert_int_equal(auth_host_header_parse("[::1]:80", h, sizeof h), 0);
    assert_string_equal(h, "::1");
    assert_int_equal(auth_host_header_parse("127.0.0.1", h, sizeof h), 0);
    assert_string_equal(h, "127.0.0.1");
    const char *bad[] = {"", ":80", "::1", "[::1", "[::1]x", "a:b:c", "host:", "host:123456", "host:80x", "ho st",
                         "host/path", "h@st", "[]", "[::1]:", "x:-1",
                         /* empty labels (fuzz_host): */
                         "127001..", "a..b", ".a", ".", "..:80",
                         /* brackets without an IPv6 address (fuzz_host): */
                         "[.]", "[localhost]", "[127.0.0.1]:80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(auth_host_header_parse(bad[i], h, sizeof h), -1);
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    assert_int_equal(auth_host_header_parse(longname, h, sizeof h), -1);

    /* Loopback names and addresses pass; the rebinding attacker's name does not, even when
     * it resolves to 127.0.0.1 (which is the whole attack). */
    assert_true(auth_host_allowed("localhost:8080", NULL, 0));
    assert_true(auth_host_allowed("127.0.0.1:8080", NULL, 0));
    assert_true(auth_host_allowed("127.3.4.5", NULL, 0));
    assert_true(auth_host_allowed("[::1]:8080", NULL, 0));
    assert_false(auth_host_allowed("attacker.example:8080", NULL, 0));
    assert_false(auth_host_allowed("127.0.0.1.attacker.example", NULL, 0));
    assert_false(auth_host_allowed("localhost.attacker.example", NULL, 0));
    assert_false(auth_host_allowed("0.0.0.0:8080", NULL, 0));
    assert_false(auth_host_allowed("10.1.2.3", NULL, 0));
    assert_false(auth_host_allowed("[::ffff:127.0.0.1]", NULL, 0));
    assert_false(auth_host_allowed(NULL, NULL, 0)); /* no Host header */
    assert_false(auth_host_allowed("", NULL, 0));
    /* --allowed-host: by name, without case, port or final dot */
    const char *allowed[] = {"Pacer.Lab", "tunnel:9000"};
    assert_true(auth_host_allowed("pacer.lab:8080", allowed, 2));
    assert_true(auth_host_allowed("PACER.LAB.", allowed, 2));
    assert_true(auth_host_allowed("tunnel", allowed, 2));
    assert_false(auth_host_allowed("pacer.lab.attacker.example", allowed, 2));
    assert_false(auth_host_allowed("lab", allowed, 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_file_atomic_durable),
        cmocka_unit_test(test_fs_atomic_write),
        cmocka_unit_test(test_redis_url_redact),
        cmocka_unit_test(test_redis_password_file),
        cmocka_unit_test(test_host_header),
        cmocka_unit_test(test_remove_tree_keeps_link_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
