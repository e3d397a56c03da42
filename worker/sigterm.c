/* worker/sigterm.c - see sigterm.h. */
#include "sigterm.h"

#include <math.h>
#include <signal.h>
#include <string.h>

#include "notice.h"

/* Written by the handler only; a sig_atomic_t is the one type it may write. */
static volatile sig_atomic_t heard;

static void on_notice(int sig) { heard = sig; }

int sigterm_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_notice;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0) return -1;
    return sigaction(NOTICE_FORWARDED_SIGNAL, &sa, NULL);
}

int sigterm_installed(void)
{
    struct sigaction term, usr;
    if (sigaction(SIGTERM, NULL, &term) != 0 || sigaction(NOTICE_FORWARDED_SIGNAL, NULL, &usr) != 0) return 0;
    return term.sa_handler == on_notice && usr.sa_handler == on_notice;
}

int sigterm_heard(void) { return (int)heard; }

float sigterm_slot_pack(int contributes, int heard_one, int nranks)
{
    return (float)((contributes ? 1 : 0) + (heard_one ? nranks + 1 : 0));
}

int sigterm_slot_unpack(float sum, int nranks, int *heard_ranks)
{
    long v = lrintf(sum), base = (long)nranks + 1;
    if (v < 0) v = 0;
    *heard_ranks = (int)(v / base);
    return (int)(v % base);
}
