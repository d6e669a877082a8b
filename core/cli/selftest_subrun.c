/* selftest's sub-runs and the signals that stop them (see selftest_subrun.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/selftest_subrun.h"
#include "base/alloc.h"

/* SIGINT, SIGTERM, SIGHUP while a sub-run runs: handed on to it (it stops its workers as any run
   does), and no further sub-run starts; the command then cleans up and exits 128+N. */
static volatile sig_atomic_t stop_signal;
static volatile pid_t running;

static void on_signal(int sig) {
    stop_signal = sig;
    if (running > 0) kill(running, sig);
}

int sr__selftest_stopped(void) { return stop_signal; }

static const int stop_sigs[3] = {SIGINT, SIGTERM, SIGHUP};

void sr__selftest_catch_signals(struct sigaction old[3]) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) sigaction(stop_sigs[i], &sa, &old[i]);
}

void sr__selftest_restore_signals(const struct sigaction old[3]) {
    for (int i = 0; i < 3; i++) sigaction(stop_sigs[i], &old[i], NULL);
}

int sr__selftest_subrun(const char *job, const char *log, const char *env_set, char *const *passthrough) {
    if (stop_signal) return 128 + stop_signal;
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return -1;
    self[len] = 0;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        /* its own process group: a Ctrl-C reaches it once, through on_signal */
        setpgid(0, 0);
        for (int i = 0; i < 3; i++) signal(stop_sigs[i], SIG_DFL);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(127);
        /* in the job's folder: paths in it can be relative, the same on every node (every [task]
           key is part of the fingerprint the nodes of a run must agree on) */
        char *folder = sr__strdup(job), *slash = folder ? strrchr(folder, '/') : NULL;
        if (slash) *slash = 0;
        if (!folder || chdir(slash ? folder : ".") != 0) _exit(127);
        free(folder);
        if (env_set) putenv((char *)env_set);
        char *argv[32];
        int n = 0;
        argv[n++] = self;
        argv[n++] = (char *)job;
        for (int i = 0; passthrough && passthrough[i] && n < 30; i++) argv[n++] = passthrough[i];
        argv[n] = NULL;
        execv(self, argv);
        _exit(127);
    }
    running = pid;
    if (stop_signal) kill(pid, stop_signal); /* arrived between fork and here */
    int st = 0, rc = -1;
    while ((rc = (int)waitpid(pid, &st, 0)) < 0 && errno == EINTR) {}
    running = 0;
    if (rc < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void sr__selftest_show_log(const char *log) {
    FILE *f = fopen(log, "r");
    if (!f) return;
    char *ring[12] = {0}, *line = NULL;
    size_t cap = 0, n = 0;
    while (getline(&line, &cap, f) > 0) {
        free(ring[n % 12]);
        ring[n++ % 12] = sr__strdup(line);
    }
    free(line);
    fclose(f);
    fprintf(stderr, "  last lines of %s:\n", log);
    for (size_t i = n > 12 ? n - 12 : 0; i < n; i++) {
        fprintf(stderr, "    %s", ring[i % 12] ? ring[i % 12] : "\n");
        free(ring[i % 12]);
        ring[i % 12] = NULL;
    }
}
