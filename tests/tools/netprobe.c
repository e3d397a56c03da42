/* tests/tools/netprobe.c - what the hardening tests need from the network that the shell
 * cannot do (tests/integration/hardening_secrets.sh, hardening_admission.sh).
 *
 *   netprobe free-port
 *       prints a TCP port on 127.0.0.1 that nothing listens on now (bound to port 0 and
 *       closed: a caller that loses the race tries again).
 *   netprobe halfopen ADDR PORT SRC N HOLD_S
 *       a Slowloris client: N connections to ADDR:PORT from the local address SRC (e.g.
 *       127.0.0.2, so that the server sees one client other than the test's curl), each
 *       sending the start of a request whose headers never end. Prints
 *         "connected C refused R"          once every connect has been tried,
 *         "closed at once K"               those the server closed within 1 s (a per-
 *                                          address limit closes them on accept),
 *       then, each time more are closed, "closed after T s: M" (cumulative), and at the
 *       end (all closed, or HOLD_S passed) "open O after T s". Exit 0, 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof a;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("netprobe: free-port");
        return 1;
    }
    printf("%d\n", ntohs(a.sin_port));
    close(fd);
    return 0;
}

/* Polls the open connections for 'closed by the server' (readable with EOF or an error),
 * closing and forgetting those; returns how many are still open. */
static int reap(int *fds, int n, int timeout_ms)
{
    struct pollfd *p = calloc((size_t)n, sizeof *p);
    int open = 0;
    if (!p) return n;
    for (int i = 0; i < n; i++) {
        p[i].fd = fds[i];
        p[i].events = POLLIN;
    }
    poll(p, (nfds_t)n, timeout_ms);
    for (int i = 0; i < n; i++) {
        if (fds[i] < 0) continue;
        if (p[i].revents & (POLLIN | POLLERR | POLLHUP)) {
            char buf[512];
            ssize_t k = recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
            if (k <= 0 && !(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) {
                close(fds[i]);
                fds[i] = -1;
                continue;
            }
        }
        open++;
    }
    free(p);
    return open;
}

static int halfopen(const char *addr, int port, const char *src, int n, double hold_s)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)n + 64 ? rl.rlim_max : (rlim_t)n + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int *fds = calloc((size_t)n, sizeof *fds);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in from = {.sin_family = AF_INET};
    if (!fds || inet_pton(AF_INET, addr, &to.sin_addr) != 1 || inet_pton(AF_INET, src, &from.sin_addr) != 1) {
        fprintf(stderr, "netprobe: halfopen: bad address\n");
        return 2;
    }
    static const char START[] = "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
    int connected = 0, refused = 0;
    for (int i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&from, sizeof from) != 0 ||
            connect(fds[i], (struct sockaddr *)&to, sizeof to) != 0 ||
            send(fds[i], START, sizeof START - 1, MSG_NOSIGNAL) < 0) {
            if (fds[i] >= 0) close(fds[i]);
            fds[i] = -1;
            refused++;
            continue;
        }
        connected++;
    }
    double t0 = now_s();
    printf("connected %d refused %d\n", connected, refused);
    fflush(stdout);
    /* the whole first second, not the first poll's return: on a loaded machine the server
     * closes the excess connections in several batches */
    int open = reap(fds, n, 0);
    while (open > 0 && now_s() - t0 < 1.0) open = reap(fds, n, 100);
    printf("closed at once %d\n", connected - open);
    fflush(stdout);
    int last = open;
    while (open > 0 && now_s() - t0 < hold_s) {
        open = reap(fds, n, 200);
        if (open != last) {
            printf("closed after %.1f s: %d\n", now_s() - t0, connected - open);
            fflush(stdout);
            last = open;
        }
    }
    printf("open %d after %.1f s\n", open, now_s() - t0);
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0) close(fds[i]);
    free(fds);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "free-port") == 0) return free_port();
    if (argc == 7 && strcmp(argv[1], "halfopen") == 0)
        return halfopen(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]), atof(argv[6]));
    fprintf(stderr, "usage: netprobe free-port | netprobe halfopen ADDR PORT SRC N HOLD_S\n");
    return 2;
}
