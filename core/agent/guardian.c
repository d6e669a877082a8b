#define _GNU_SOURCE
#include "agent/guardian.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"

/* The wire: 'W' + a pid_t per watched group; 'R' releases.  EOF without 'R': the agent died. */
static int guard_fd = -1;
static pid_t guard_pid = -1;

static _Noreturn void guard(int in) {
    /* Ctrl-C and the launcher's SIGTERM (or Slurm's SIGUSR1 ahead of the time limit, sent to every
       process of the step) go to the agent, which stops its workers and releases us */
    signal(SIGINT, SIG_IGN), signal(SIGTERM, SIG_IGN), signal(SIGHUP, SIG_IGN), signal(SIGUSR1, SIG_IGN);
    prctl(PR_SET_NAME, "shardrun-guard");
    pid_t *groups = NULL;
    size_t n = 0;
    for (;;) {
        char op;
        ssize_t r = read(in, &op, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break; /* the agent is gone */
        if (op == 'R') _exit(0);
        pid_t pg;
        size_t got = 0;
        while (got < sizeof pg) {
            ssize_t k = read(in, (char *)&pg + got, sizeof pg - got);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) goto gone;
            got += (size_t)k;
        }
        pid_t *more = sr__realloc(groups, (n + 1) * sizeof *groups);
        if (more) {
            groups = more, groups[n++] = pg;
        } else { /* the run goes on without this group guarded: say so (the logger may allocate) */
            char msg[300];
            int len = snprintf(msg, sizeof msg,
                               "shardrun: warning: the guardian process is out of memory (%zu bytes for %zu "
                               "process groups): if this shardrun is killed outright, what the worker of process "
                               "group %d starts in the background may be left running\n",
                               (n + 1) * sizeof *groups, n + 1, (int)pg);
            if (len > 0 && write(2, msg, (size_t)len) < 0) { /* nowhere else to say it */
            }
        }
    }
gone:
    for (size_t i = 0; i < n; i++) kill(-groups[i], SIGKILL);
    _exit(0);
}

int sr__guardian_start(void) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]), close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[1]);
        /* nothing else of the agent's: its pipes must close when the agent and workers exit */
        for (int fd = 3; fd < 1024; fd++)
            if (fd != p[0]) close(fd);
        guard(p[0]);
    }
    close(p[0]);
    guard_fd = p[1];
    guard_pid = pid;
    return 0;
}

void sr__guardian_watch(pid_t pgid) {
    if (guard_fd < 0) return;
    char msg[1 + sizeof pgid];
    msg[0] = 'W';
    memcpy(msg + 1, &pgid, sizeof pgid);
    if (write(guard_fd, msg, sizeof msg) != (ssize_t)sizeof msg) { /* the guardian is gone: nothing to do */
    }
}

void sr__guardian_release(void) {
    if (guard_fd < 0) return;
    if (write(guard_fd, "R", 1) != 1) { /* the guardian is gone already */
    }
    close(guard_fd);
    guard_fd = -1;
    while (waitpid(guard_pid, NULL, 0) < 0 && errno == EINTR) {}
    guard_pid = -1;
}

int sr__guardian_fd(void) { return guard_fd; }
