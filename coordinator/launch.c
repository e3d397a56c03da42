/* coordinator/launch.c - see launch.h. */
#include "launch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

extern char **environ;

/* The job wrapper. $1 = exit-code file, the rest = the command. 'trap : TERM' keeps the
 * shell alive through a group-wide SIGTERM until mpirun is gone (a handler, unlike an
 * ignored signal, is not inherited by the commands it runs). */
static const char WRAPPER[] = "trap : TERM INT HUP\n"
                              "ec=$1; shift\n"
                              "\"$@\"\n"
                              "s=$?\n"
                              "echo $s > \"$ec.tmp\" && mv -f \"$ec.tmp\" \"$ec\"\n"
                              "exit $s\n";

const char *launch_wrapper_script(void) { return WRAPPER; }

static int spawn_with(const char *const *argv, int out_fd_from_path, const char *out_path, int pipe_fd, pid_t *pid,
                      char *err, size_t errlen)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t empty, def;
    int rc;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (pipe_fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, pipe_fd, 1);
        posix_spawn_file_actions_adddup2(&fa, pipe_fd, 2);
    } else {
        const char *path = out_fd_from_path && out_path ? out_path : "/dev/null";
        posix_spawn_file_actions_addopen(&fa, 1, path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    }
    /* Redis sockets, the HTTP listener and log files must not leak into jobs. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    sigemptyset(&empty);
    sigemptyset(&def);
    int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&def, sigs[i]);
    posix_spawnattr_setsigmask(&at, &empty);
    posix_spawnattr_setsigdefault(&at, &def);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (strchr(argv[0], '/')) rc = posix_spawn(pid, argv[0], &fa, &at, (char *const *)argv, environ);
    else rc = posix_spawnp(pid, argv[0], &fa, &at, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start %s: %s", argv[0], strerror(rc));
        return -1;
    }
    return 0;
}

int launch_spawn(const char *const *argv, const char *out_path, pid_t *pid, char *err, size_t errlen)
{
    return spawn_with(argv, 1, out_path, -1, pid, err, errlen);
}

int launch_job(const char *tag, const char *const *argv, const char *log_path, const char *exit_code_path, pid_t *pid,
               char *err, size_t errlen)
{
    size_t n = 0;
    while (argv[n]) n++;
    const char **full = calloc(n + 6, sizeof *full);
    if (!full) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    full[0] = "/bin/sh";
    full[1] = "-c";
    full[2] = WRAPPER;
    full[3] = tag; /* $0: what ps shows for the wrapper */
    full[4] = exit_code_path;
    for (size_t i = 0; i < n; i++) full[5 + i] = argv[i];
    int rc = launch_spawn(full, log_path, pid, err, errlen);
    free(full);
    return rc;
}

int launch_capture(const char *const *argv, char *out, size_t len, double timeout_s)
{
    int fds[2];
    char err[256];
    pid_t pid;
    size_t used = 0;
    int status = -1;
    if (len) out[0] = 0;
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    if (spawn_with(argv, 0, NULL, fds[1], &pid, err, sizeof err) != 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    close(fds[1]);
    double deadline = clock_mono_s() + timeout_s;
    for (;;) {
        double left = deadline - clock_mono_s();
        if (left <= 0) {
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int k = poll(&p, 1, (int)(left * 1000) + 1);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) continue;
        char buf[4096];
        ssize_t r = read(fds[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        if (len && used < len - 1) {
            size_t take = (size_t)r < len - 1 - used ? (size_t)r : len - 1 - used;
            memcpy(out + used, buf, take);
            used += take;
            out[used] = 0;
        }
    }
    close(fds[0]);
    int ws;
    while (waitpid(pid, &ws, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    if (WIFEXITED(ws)) status = WEXITSTATUS(ws);
    else if (WIFSIGNALED(ws)) status = 128 + WTERMSIG(ws); /* as a shell reports it */
    return status;
}

int proc_stat(pid_t pid, unsigned long long *start, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* The command name may hold spaces and parentheses: fields start after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p) return -1;
    char st = 0;
    unsigned long long t = 0;
    if (sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &st, &t) != 2)
        return -1;
    if (start) *start = t;
    if (state) *state = st;
    return 0;
}

int proc_alive(pid_t pid, unsigned long long start)
{
    unsigned long long t;
    char st;
    if (pid <= 0) return 0;
    if (proc_stat(pid, &t, &st) != 0) return 0;
    if (st == 'Z' || st == 'X') return 0;
    if (start && t != start) return 0;
    return 1;
}

/* Whether stat's command name (between the parentheses) is MPI's launcher's. */
static int is_mpi_launcher(const char *stat)
{
    static const char *const NAMES[] = {"(mpirun)", "(orterun)", "(prterun)", "(mpiexec)"};
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strstr(stat, NAMES[i])) return 1;
    return 0;
}

/* Signals (sig != 0) every live (non-zombie) process of session sid, or only MPI's
 * launchers in it (launchers_only); returns how many there are. */
static int session_each_of(pid_t sid, int sig, int launchers_only)
{
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 1) continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = 0;
        char *p = strrchr(buf, ')');
        char st;
        int session;
        if (!p || sscanf(p + 1, " %c %*d %*d %d", &st, &session) != 2) continue;
        if (session != sid || st == 'Z' || st == 'X') continue;
        if (launchers_only && !is_mpi_launcher(buf)) continue;
        n++;
        if (sig) kill((pid_t)pid, sig);
    }
    closedir(d);
    return n;
}

static int session_each(pid_t sid, int sig) { return session_each_of(sid, sig, 0); }

int session_alive(pid_t sid)
{
    if (sid <= 1) return 0;
    return session_each(sid, 0) > 0;
}

int session_signal_launchers(pid_t sid, int sig)
{
    if (sid <= 1 || sig == 0) return 0;
    return session_each_of(sid, sig, 1);
}

void session_signal(pid_t sid, int sig)
{
    /* sid 0 or 1 would mean our own group or everything: never. */
    if (sid <= 1 || sig == 0) return;
    kill(-sid, sig);
    session_each(sid, sig);
}

int exit_code_read(const char *path, int *code)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int v, ok = fscanf(f, "%d", &v) == 1;
    fclose(f);
    if (!ok) return -1;
    *code = v;
    return 0;
}

static int is_banner(const char *s, size_t n)
{
    if (n < 4) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '-') return 0;
    return 1;
}

size_t log_read_tail(const char *path, char *buf, size_t cap)
{
    size_t n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) goto out;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > (off_t)(cap - 1)) lseek(fd, st.st_size - (off_t)(cap - 1), SEEK_SET);
    while (n < cap - 1) {
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k <= 0) break;
        n += (size_t)k;
    }
    close(fd);
out:
    buf[n] = 0;
    return n;
}

int log_last_line(const char *path, char *out, size_t len)
{
    enum { TAIL = 16384 };
    char *buf = NULL;
    int rc = -1;
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    if (fseek(f, 0, SEEK_END) != 0) goto out;
    long size = ftell(f);
    long from = size > TAIL ? size - TAIL : 0;
    if (size < 0 || fseek(f, from, SEEK_SET) != 0) goto out;
    buf = malloc(TAIL + 1);
    if (!buf) goto out;
    size_t n = fread(buf, 1, TAIL, f);
    buf[n] = 0;
    /* Walk lines from the end. Inside a dashed banner (mpirun's own explanation of what
     * went wrong) nothing counts; a "pacer-worker:" line wins over any other. */
    const char *best = NULL;
    size_t best_len = 0;
    const char *fallback = NULL;
    size_t fallback_len = 0;
    int in_banner = 0;
    size_t end = n;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && buf[start - 1] != '\n') start--;
        const char *line = buf + start;
        size_t ll = end - start;
        while (ll > 0 && (line[ll - 1] == '\n' || line[ll - 1] == '\r' || line[ll - 1] == ' ')) ll--;
        if (from > 0 && start == 0) break; /* first line of the tail may be partial */
        if (is_banner(line, ll)) {
            in_banner = !in_banner;
        } else if (!in_banner && ll > 0) {
            if (strncmp(line, "pacer-worker:", 13) == 0 && !best) {
                best = line;
                best_len = ll;
                break;
            }
            if (!fallback && strncmp(line, "=== pacer-coordinator", 21) != 0) {
                fallback = line;
                fallback_len = ll;
            }
        }
        end = start > 0 ? start - 1 : 0;
    }
    if (!best) {
        best = fallback;
        best_len = fallback_len;
    }
    if (best && len) {
        if (best_len >= len) best_len = len - 1;
        memcpy(out, best, best_len);
        out[best_len] = 0;
        rc = 0;
    }
out:
    free(buf);
    fclose(f);
    return rc;
}

int log_bound(const char *path, long max_bytes)
{
    struct stat st;
    if (stat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (st.st_size <= max_bytes) return 0;
    char old[4096];
    if (snprintf(old, sizeof old, "%s.1", path) >= (int)sizeof old) return -1;
    int in = -1, outfd = -1, rc = -1;
    char *buf = malloc(1 << 16);
    if (!buf) return -1;
    in = open(path, O_RDONLY | O_CLOEXEC);
    outfd = open(old, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || outfd < 0) goto out;
    for (;;) {
        ssize_t r = read(in, buf, 1 << 16);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) goto out;
        if (r == 0) break;
        for (ssize_t o = 0; o < r;) {
            ssize_t w = write(outfd, buf + o, (size_t)(r - o));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) goto out;
            o += w;
        }
    }
    if (truncate(path, 0) != 0) goto out;
    rc = 1;
out:
    if (in >= 0) close(in);
    if (outfd >= 0) close(outfd);
    free(buf);
    return rc;
}
