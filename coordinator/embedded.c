/* coordinator/embedded.c - see embedded.h. */
#include "embedded.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "fs.h"
#include "clog.h"
#include "launch.h"

#define BACKOFF_MIN_S 0.5
#define BACKOFF_MAX_S 5.0

/* 1 when something answers PING on the socket within timeout_s. */
static int embedded_ping(const char *sock, double timeout_s)
{
    struct timeval tv = {(time_t)timeout_s, (suseconds_t)((timeout_s - (double)(time_t)timeout_s) * 1e6)};
    redisContext *c = redisConnectUnixWithTimeout(sock, tv);
    int ok = 0;
    if (c && !c->err && redisSetTimeout(c, tv) == REDIS_OK) {
        redisReply *r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        if (r) freeReplyObject(r);
    }
    if (c) redisFree(c);
    return ok;
}

static int is_redis_server(pid_t pid)
{
    char path[64], comm[64] = "";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
    fclose(f);
    return strncmp(comm, "redis-server", 12) == 0;
}

static void pidfile_path(const embedded_t *e, char *out, size_t len) { snprintf(out, len, "%s/redis.pid", e->dir); }

static int spawn_server(embedded_t *e, char *err, size_t errlen)
{
    char log[4200], pidfile[4200];
    snprintf(log, sizeof log, "%s/redis.log", e->dir);
    pidfile_path(e, pidfile, sizeof pidfile);
    const char *argv[] = {
        e->server,  "--port", "0",    "--unixsocket", e->sock, "--unixsocketperm",
        "700",      "--dir",  e->dir, "--appendonly", "yes",   "--appendfsync",
        "everysec", "--save", "",     "--daemonize",  "no",    "--logfile",
        log,        NULL,
    };
    /* A socket file left by a dead server would make the new one fail to bind. */
    unlink(e->sock);
    pid_t pid;
    if (launch_spawn(argv, log, &pid, err, errlen) != 0) return -1;
    e->pid = pid;
    e->is_child = 1;
    e->owned = 1;
    if (proc_stat(pid, &e->pstart, NULL) != 0) e->pstart = 0;
    char num[32];
    int n = snprintf(num, sizeof num, "%d\n", (int)pid);
    if (fs_atomic_write_fixed(pidfile, num, (size_t)n, 0644) != 0)
        clog_printf("embedded redis: cannot write %s: %s", pidfile, strerror(errno));
    return 0;
}

/* 1 while the server process we know of is alive; reaps it when it is our child. */
static int server_alive(embedded_t *e)
{
    if (e->pid <= 0) return 0;
    if (e->is_child) {
        int st;
        pid_t r = waitpid(e->pid, &st, WNOHANG);
        if (r == e->pid || (r < 0 && errno == ECHILD)) return 0;
        return 1;
    }
    return proc_alive(e->pid, e->pstart);
}

int embedded_start(embedded_t *e, const char *state_dir, const char *server, double timeout_s, char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    if (state_dir[0] != '/') {
        snprintf(err, errlen, "state dir %s: must be absolute", state_dir);
        return -1;
    }
    snprintf(e->dir, sizeof e->dir, "%s", state_dir);
    snprintf(e->server, sizeof e->server, "%s", server && *server ? server : "redis-server");
    if (strlen(state_dir) + strlen("/redis.sock") >= sizeof e->sock) {
        snprintf(err, errlen,
                 "state dir %s: too long for a unix socket path (max %zu bytes); "
                 "use a shorter --state-dir or --redis",
                 state_dir, sizeof e->sock - 1 - strlen("/redis.sock"));
        return -1;
    }
    snprintf(e->sock, sizeof e->sock, "%s/redis.sock", state_dir);
    snprintf(e->url, sizeof e->url, "unix://%s", e->sock);
    /* Owner only: Redis's files and socket are here (the daemon's umask is 077 too). */
    if (fs_mkdir_p(state_dir, 0700) != 0) {
        snprintf(err, errlen, "state dir %s: %s", state_dir, strerror(errno));
        return -1;
    }

    if (embedded_ping(e->sock, 0.5)) {
        char pidfile[4200];
        int pid = 0;
        pidfile_path(e, pidfile, sizeof pidfile);
        FILE *f = fopen(pidfile, "r");
        if (f) {
            if (fscanf(f, "%d", &pid) != 1) pid = 0;
            fclose(f);
        }
        if (pid > 0 && proc_alive(pid, 0) && is_redis_server(pid)) {
            e->pid = pid;
            e->owned = 1;
            proc_stat(pid, &e->pstart, NULL);
            clog_printf("embedded redis: adopted the running server (pid %d) on %s", pid, e->sock);
        } else {
            clog_printf("embedded redis: something answers on %s but %s names no live redis-server; "
                        "using it without managing it",
                        e->sock, pidfile);
        }
        return 0;
    }

    if (spawn_server(e, err, errlen) != 0) return -1;
    double t0 = clock_mono_s();
    for (;;) {
        if (embedded_ping(e->sock, 0.2)) {
            clog_printf("embedded redis: started %s (pid %d) on %s", e->server, (int)e->pid, e->sock);
            return 0;
        }
        if (!server_alive(e)) {
            char log[4200], line[512] = "";
            snprintf(log, sizeof log, "%s/redis.log", e->dir);
            log_last_line(log, line, sizeof line);
            snprintf(err, errlen, "embedded redis-server exited at start: %s", line[0] ? line : "(no log)");
            e->pid = 0;
            return -1;
        }
        if (clock_mono_s() - t0 > timeout_s) {
            snprintf(err, errlen, "embedded redis-server did not answer PING on %s within %.0f s", e->sock, timeout_s);
            embedded_stop(e, 2.0);
            return -1;
        }
        clock_sleep_s(0.05);
    }
}

int embedded_check(embedded_t *e)
{
    if (e->pid > 0 && !e->owned) return 0; /* someone else's server: not ours to restart */
    if (e->pid > 0 && server_alive(e)) return 0;
    if (e->pid <= 0 && embedded_ping(e->sock, 0.1)) return 0;
    double now = clock_wall_s();
    if (now < e->next_try) return 0;
    if (e->pid > 0) clog_printf("embedded redis: server (pid %d) is gone; starting it again", (int)e->pid);
    e->pid = 0;
    char err[512];
    e->backoff = e->backoff < BACKOFF_MIN_S ? BACKOFF_MIN_S : e->backoff * 2;
    if (e->backoff > BACKOFF_MAX_S) e->backoff = BACKOFF_MAX_S;
    e->next_try = now + e->backoff;
    if (spawn_server(e, err, sizeof err) != 0) {
        clog_printf("embedded redis: %s", err);
        return -1;
    }
    clog_printf("embedded redis: restarted (pid %d)", (int)e->pid);
    return 1;
}

void embedded_stop(embedded_t *e, double timeout_s)
{
    if (!e->owned || e->pid <= 0) return;
    kill(e->pid, SIGTERM);
    double t0 = clock_mono_s();
    int killed = 0;
    while (server_alive(e)) {
        double el = clock_mono_s() - t0;
        if (el > timeout_s && !killed) {
            clog_printf("embedded redis: pid %d did not stop within %.0f s; SIGKILL", (int)e->pid, timeout_s);
            kill(e->pid, SIGKILL);
            killed = 1;
        }
        if (el > timeout_s + 5) break;
        clock_sleep_s(0.02);
    }
    char pidfile[4200];
    pidfile_path(e, pidfile, sizeof pidfile);
    unlink(pidfile);
    e->pid = 0;
}
