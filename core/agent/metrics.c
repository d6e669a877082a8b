/* The agent's Prometheus endpoint (see metrics.h). */
#define _GNU_SOURCE
#include "agent/metrics.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int listen_fd = -1;
static pthread_t thread;
static atomic_int stopping;
static sem_t entered; /* posted by the thread once it runs serve() (see sr__metrics_start) */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* what the watchdog handed over last (mu), and the thread's copy of it */
typedef struct snapshot {
    sr__rank_status r[SR__METRICS_MAX_RANKS];
    int n, node, restarts;
    unsigned long long hangs;
} snapshot;
static snapshot shared, served;
static char body[SR__METRICS_MAX_RANKS * 2048 + 4096];
static char head[512];

void sr__metrics_publish(const sr__rank_status *rs, int n, int node, int restarts, unsigned long long hangs) {
    if (listen_fd < 0) return;
    if (n > SR__METRICS_MAX_RANKS) n = SR__METRICS_MAX_RANKS;
    pthread_mutex_lock(&mu);
    memcpy(shared.r, rs, (size_t)n * sizeof *rs);
    shared.n = n, shared.node = node, shared.restarts = restarts, shared.hangs = hangs;
    pthread_mutex_unlock(&mu);
}

/* A sample's value as the exposition format writes it (NaN, +Inf, -Inf). */
static const char *value(double v, char *buf, size_t len) {
    if (isnan(v)) return "NaN";
    if (isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    snprintf(buf, len, "%.17g", v);
    return buf;
}

enum { TRAINER = 1, DONE = 2 }; /* a series only for a trainer's rank, and only after its first step */

/* The per-rank metrics: name, type, help, which ranks have it, and its value. */
static const struct {
    const char *name, *type, *help;
    int when;
} per_rank[] = {
    {"shardrun_train_step", "gauge", "Optimizer steps this rank finished (the trainer's global_step).", TRAINER},
    {"shardrun_train_steps_planned", "gauge", "Optimizer steps the run takes in all (max_steps, or the epochs').",
     TRAINER},
    {"shardrun_train_loss", "gauge", "The last step's training loss, the mean over micro-batches and ranks.",
     TRAINER | DONE},
    {"shardrun_train_tokens_per_second", "gauge", "Tokens per second of the last step, every rank's together.",
     TRAINER | DONE},
    {"shardrun_train_step_duration_seconds", "gauge", "Seconds the last optimizer step took.", TRAINER | DONE},
    {"shardrun_memory_peak_bytes", "gauge", "The FSDP engine's peak memory on this rank's device, in bytes.", TRAINER},
    {"shardrun_checkpoints_total", "counter", "Checkpoints this rank wrote in this attempt.", TRAINER},
    {"shardrun_checkpoint_duration_seconds", "gauge", "Seconds the last checkpoint took to write.", TRAINER | DONE},
    {"shardrun_checkpoint_size_bytes", "gauge", "The last checkpoint's size on disk, in bytes (rank 0 only).",
     TRAINER | DONE},
    {"shardrun_last_progress_age_seconds", "gauge",
     "Seconds since the rank last made progress (a step, a phase, a collective).", 0},
};

static double rank_value(size_t m, const sr__rank_status *r) {
    switch (m) {
    case 0: return (double)r->steps_done;
    case 1: return (double)r->steps_total;
    case 2: return r->loss;
    case 3: return r->tok_s;
    case 4: return r->step_s;
    case 5: return (double)r->mem_bytes;
    case 6: return (double)r->ckpt_count;
    case 7: return r->ckpt_s;
    case 8: return (double)r->ckpt_bytes;
    default: return r->age;
    }
}

static int has(int when, const sr__rank_status *r, size_t m) {
    if ((when & TRAINER) && r->steps_total <= 0) return 0;
    if (!(when & DONE)) return 1;
    if (m == 7) return r->ckpt_count > 0;
    if (m == 8) return r->ckpt_bytes > 0;
    return r->steps_done > 0;
}

/* The exposition of `served` into body[]; its length. */
static size_t render(void) {
    size_t k = 0, cap = sizeof body;
    char num[64];
#define OUT(...)                                                                                                       \
    do {                                                                                                               \
        if (k < cap) k += (size_t)snprintf(body + k, cap - k, __VA_ARGS__);                                            \
    } while (0)
    for (size_t m = 0; m < sizeof per_rank / sizeof *per_rank; m++) {
        int any = 0;
        for (int i = 0; i < served.n && !any; i++) any = has(per_rank[m].when, &served.r[i], m);
        if (!any) continue;
        OUT("# HELP %s %s\n# TYPE %s %s\n", per_rank[m].name, per_rank[m].help, per_rank[m].name, per_rank[m].type);
        for (int i = 0; i < served.n; i++)
            if (has(per_rank[m].when, &served.r[i], m))
                OUT("%s{rank=\"%d\",node=\"%d\"} %s\n", per_rank[m].name, served.r[i].rank, served.r[i].node,
                    value(rank_value(m, &served.r[i]), num, sizeof num));
    }
    OUT("# HELP shardrun_restarts_total Restarts of the job in this launch (max_restarts).\n"
        "# TYPE shardrun_restarts_total counter\nshardrun_restarts_total{node=\"%d\"} %d\n",
        served.node, served.restarts);
    OUT("# HELP shardrun_hangs_total Hangs the watchdog found in this launch (hang_timeout).\n"
        "# TYPE shardrun_hangs_total counter\nshardrun_hangs_total{node=\"%d\"} %llu\n",
        served.node, served.hangs);
    OUT("# HELP shardrun_ranks Ranks this node's shardrun watches now.\n"
        "# TYPE shardrun_ranks gauge\nshardrun_ranks{node=\"%d\"} %d\n",
        served.node, served.n);
#undef OUT
    return k < cap ? k : cap - 1;
}

static int send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* One connection: its request (to the blank line, 4 KiB at most), one answer, closed. */
static void serve_one(int c) {
    char req[4096];
    size_t n = 0;
    while (n < sizeof req - 1) {
        ssize_t r = recv(c, req + n, sizeof req - 1 - n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
        req[n] = 0;
        if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n")) break;
    }
    req[n] = 0;
    const char *sp = strchr(req, ' '), *path = sp ? sp + 1 : "";
    size_t mlen = sp ? (size_t)(sp - req) : 0, plen = strcspn(path, " ?\r\n");
    int get = mlen == 3 && !strncmp(req, "GET", 3), head_only = mlen == 4 && !strncmp(req, "HEAD", 4);
    int found = plen == 8 && !strncmp(path, "/metrics", 8);
    size_t blen = 0;
    const char *status = "200 OK", *type = "text/plain; version=0.0.4; charset=utf-8";
    if (!get && !head_only) {
        status = "405 Method Not Allowed";
        blen = (size_t)snprintf(body, sizeof body, "only GET /metrics\n");
    } else if (!found) {
        status = "404 Not Found";
        blen = (size_t)snprintf(body, sizeof body, "only GET /metrics\n");
    } else {
        pthread_mutex_lock(&mu);
        served = shared;
        pthread_mutex_unlock(&mu);
        blen = render();
    }
    if (strncmp(status, "200", 3)) type = "text/plain; charset=utf-8";
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n", status,
                      type, blen, status[0] == '4' && status[2] == '5' ? "Allow: GET, HEAD\r\n" : "");
    if (send_all(c, head, (size_t)hl) == 0 && !head_only) send_all(c, body, blen);
}

static void *serve(void *arg) {
    sem_post(&entered);
    (void)arg;
    while (!atomic_load(&stopping)) {
        struct pollfd p = {.fd = listen_fd, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0) continue;
        int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) continue;
        struct timeval tv = {SR__METRICS_IO_TIMEOUT_S, 0};
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        serve_one(c);
        close(c);
    }
    return NULL;
}

/* A worker forked from the agent (a model task runs without exec) keeps no copy of the port. */
static void close_in_child(void) {
    if (listen_fd >= 0) close(listen_fd), listen_fd = -1;
}

int sr__metrics_start(int port, char *why, size_t len) {
    static int atfork;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons((unsigned short)port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0) {
        int e = errno;
        snprintf(why, len, "%s",
                 e == EADDRINUSE ? "the port is in use (another shardrun's metrics_port, a server)"
                 : e == EACCES   ? "permission denied (ports below 1024 need privileges)"
                                 : strerror(e));
        if (fd >= 0) close(fd);
        return -1;
    }
    listen_fd = fd;
    atomic_store(&stopping, 0);
    if (!atfork && pthread_atfork(NULL, NULL, close_in_child) == 0) atfork = 1;
    sem_init(&entered, 0, 0);
    if (pthread_create(&thread, NULL, serve, NULL) != 0) {
        snprintf(why, len, "cannot start its thread: %s", strerror(errno));
        close(fd), listen_fd = -1;
        return -1;
    }
    /* A new thread allocates before it runs serve() (the sanitizers' thread set-up does): a worker
       forked meanwhile would inherit the allocator locked.  serve() itself never allocates. */
    while (sem_wait(&entered) != 0 && errno == EINTR) {}
    return 0;
}

void sr__metrics_stop(void) {
    if (listen_fd < 0) return;
    atomic_store(&stopping, 1);
    pthread_join(thread, NULL);
    close(listen_fd);
    listen_fd = -1;
}
