/* SIGBUS-safe reads of mapped files (fault_guard.h). */
#define _GNU_SOURCE
#include "data/fault_guard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>

static _Thread_local sigjmp_buf *guard;
static struct sigaction previous;
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)si, (void)uc;
    if (guard) siglongjmp(*guard, 1);
    /* not a guarded read: give the signal back to whoever had it; the faulting access runs again
       and raises it there */
    sigaction(SIGBUS, &previous, NULL);
}

static void install(void) {
    struct sigaction sa = {0};
    sa.sa_sigaction = on_sigbus;
    /* NODEFER: the handler leaves by siglongjmp without restoring a signal mask (sigsetjmp(.., 0) saves
       none, a system call per read saved), so SIGBUS must not stay blocked behind it */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &previous);
}

int sr__fault_guard_run(void (*fn)(void *arg), void *arg) {
    sigjmp_buf jb;
    pthread_once(&installed, install);
    if (sigsetjmp(jb, 0)) {
        guard = NULL;
        return -1;
    }
    guard = &jb;
    fn(arg);
    guard = NULL;
    return 0;
}
