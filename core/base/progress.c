/* Worker -> agent progress records (see progress.h). */
#include "base/progress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int progress_fd = -1;

void sr__progress_set_fd(int fd) { progress_fd = fd; }

void sr__progress_send(sr__progress_kind kind, const char *text) {
    if (progress_fd < 0) return;
    char rec[1100];
    int n = snprintf(rec, sizeof rec, "%c%c%s\n", SR__PROGRESS_MARK, (char)kind, text ? text : "");
    if (n <= 0 || (size_t)n >= sizeof rec) return;
    /* one write of at most PIPE_BUF bytes: the record arrives whole or not at all */
    for (;;) {
        ssize_t w = write(progress_fd, rec, (size_t)n);
        if (w < 0 && errno == EINTR) continue;
        return;
    }
}

void sr__progress_init(sr__progress *p) {
    memset(p, 0, sizeof *p);
    p->step = -1;
    p->ckpt_step = -1;
}

static void apply(sr__progress *p, char kind, const char *text) {
    long long step;
    int at = 0;
    switch (kind) {
    case SR__PROGRESS_STARTED: p->started = 1; break;
    case SR__PROGRESS_STEP:
        if (sscanf(text, "%lld", &step) == 1) p->step = step;
        break;
    case SR__PROGRESS_CHECKPOINT:
    case SR__PROGRESS_PREEMPTED:
        if (sscanf(text, "%lld %n", &step, &at) == 1 && at > 0) {
            p->ckpt_step = step;
            snprintf(p->ckpt_path, sizeof p->ckpt_path, "%s", text + at);
            if (kind == SR__PROGRESS_PREEMPTED) p->preempted = 1;
        }
        break;
    case SR__PROGRESS_UNREAD:
        p->keys_said = 1;
        if (*text && strlen(p->unread) + strlen(text) + 2 < sizeof p->unread) strcat(strcat(p->unread, text), "\n");
        break;
    case SR__PROGRESS_UNFIXABLE:
        if (!p->unfixable[0]) snprintf(p->unfixable, sizeof p->unfixable, "%s", text); /* the first cause */
        break;
    default: break; /* a kind of a newer worker: ignored */
    }
}

size_t sr__progress_take(sr__progress *p, char *buf, size_t *n) {
    size_t pos = 0;
    while (pos < *n && buf[pos] == SR__PROGRESS_MARK) {
        char *nl = memchr(buf + pos, '\n', *n - pos);
        if (!nl) break;
        *nl = 0;
        if (nl > buf + pos + 1) apply(p, buf[pos + 1], buf + pos + 2);
        pos = (size_t)(nl - buf) + 1;
    }
    if (pos) memmove(buf, buf + pos, *n - pos), *n -= pos;
    return pos;
}

void sr__progress_io_failed(int err, const char *path) {
    static int told;
    if (told || !(err == ENOSPC || err == EDQUOT || err == EROFS)) return;
    int saved = errno; /* callers print strerror(errno) right after */
    told = 1;
    char text[600];
    snprintf(text, sizeof text,
             "could not write %.300s: %s; make room (or choose another output_dir) and run the job "
             "again with resume_from_checkpoint = latest",
             path, strerror(err));
    for (char *c = text; *c; c++)
        if (*c == '\n') *c = ' ';
    sr__progress_send(SR__PROGRESS_UNFIXABLE, text);
    errno = saved;
}
