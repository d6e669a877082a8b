/* Loading a task in a forked child before any worker starts (see task_probe.h). */
#define _GNU_SOURCE
#include "run/task_probe.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* a task's constructors that take longer than this are stuck (a worker would be, too) */
#define PROBE_SECONDS 60

static void child(const char *path, int out) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO); /* constructors may print */
    alarm(PROBE_SECONDS);
    if (dlopen(path, RTLD_NOW | RTLD_LOCAL)) _exit(0);
    const char *why = dlerror();
    if (why && write(out, why, strlen(why)) < 0) _exit(2);
    _exit(1);
}

int sr__task_probe_load(const char *path, char *err, size_t errlen) {
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) != 0) return 0; /* cannot look: the worker will say it */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return 0;
    }
    if (pid == 0) child(path, fd[1]);
    close(fd[1]);
    char buf[1024];
    size_t n = 0;
    ssize_t k;
    while (n + 1 < sizeof buf && ((k = read(fd[0], buf + n, sizeof buf - 1 - n)) > 0 || (k < 0 && errno == EINTR)))
        if (k > 0) n += (size_t)k;
    buf[n] = 0;
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (WIFEXITED(status)) snprintf(err, errlen, "%s", n ? buf : "the loader gave no reason");
    else if (WTERMSIG(status) == SIGALRM)
        snprintf(err, errlen, "loading it did not finish within %d s (its constructors hang)", PROBE_SECONDS);
    else
        snprintf(err, errlen, "loading it killed the process with signal %d (a constructor crashed)", WTERMSIG(status));
    return -1;
}
