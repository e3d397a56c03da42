/* tests/shims/epoll_del_delay.c - an LD_PRELOAD test double (coordinator_stop_busy.sh):
 * every EPOLL_CTL_DEL made by the process's main thread waits 2 ms before the real call.
 *
 * Why: libmicrohttpd 0.9.75's MHD_quiesce_daemon, called from the main thread, marks each
 * pool thread quiesced and then takes the listening socket out of that thread's epoll
 * set, panicking (abort) if the socket is no longer there; a pool thread that wakes in
 * between takes it out first. That window is a microsecond wide; the delay makes it 2 ms,
 * so a daemon that quiesces under traffic aborts almost every time instead of once in a
 * few hundred stops. Nothing else changes: the call is made, its result and errno are
 * the real ones. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    static int (*real_epoll_ctl)(int, int, int, struct epoll_event *);
    if (!real_epoll_ctl) real_epoll_ctl = (int (*)(int, int, int, struct epoll_event *))dlsym(RTLD_NEXT, "epoll_ctl");
    if (op == EPOLL_CTL_DEL && syscall(SYS_gettid) == getpid()) {
        struct timespec d = {0, 2000000};
        nanosleep(&d, NULL);
    }
    return real_epoll_ctl(epfd, op, fd, ev);
}
