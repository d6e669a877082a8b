/*
 * store_load: many busy clients against a rendezvous store (node 0's shardrun's, or any
 * sr__store_server): CONNS connections from one thread, each presenting the run's token and then
 * keeping DEPTH requests in flight without pause (an answer comes, the next request goes): each a
 * CHECK that names one key KEYS times, which costs the server far more than this side, so that it
 * always has more ready connections than it serves in one turn.  It stops after
 * SECONDS, or when the server closed every connection (the agent ended).
 *
 *   store_load --port P --token TOKEN [--host 127.0.0.1] [--conns 512] [--depth 2] [--keys 256]
 *              [--seconds 60] [--rate-file FILE]
 *
 * Prints "store_load: N connections, R requests/s over S s" at the end; --rate-file is rewritten
 * every second with the requests answered so far (a test reads it to know the load is on).
 * Exit 0, or 2 for bad arguments, 1 when no connection could be made within 10 s.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "store/wire.h"

typedef struct client {
    int fd;
    size_t n; /* bytes of an answer read so far */
    unsigned char in[4096];
} client;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One request: header, then each item as u32 length and bytes. */
static size_t encode(unsigned char *out, unsigned op, const char *const *items, int n) {
    size_t off = SR__STORE_HEADER;
    memset(out, 0, SR__STORE_HEADER);
    sr__put_u32(out, SR__STORE_MAGIC);
    out[4] = (unsigned char)op;
    sr__put_u32(out + 8, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(items[i]);
        sr__put_u32(out + off, (uint32_t)len);
        memcpy(out + off + 4, items[i], len);
        off += 4 + len;
    }
    return off;
}

static int write_all(int fd, const unsigned char *p, size_t len) {
    while (len) {
        ssize_t k = write(fd, p, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k, len -= (size_t)k;
    }
    return 0;
}

/* A blocking connection that presented the token and got its OK; -1 when refused or unreachable. */
static int open_client(const char *host, int port, const char *token) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = inet_addr(host);
    unsigned char buf[1024];
    const char *items[1] = {token};
    size_t len = encode(buf, SR__OP_HELLO, items, 1);
    unsigned char reply[SR__STORE_HEADER];
    size_t got = 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 || write_all(fd, buf, len) != 0) goto fail;
    while (got < sizeof reply) {
        ssize_t k = read(fd, reply + got, sizeof reply - got);
        if (k <= 0) goto fail;
        got += (size_t)k;
    }
    if (sr__get_u32(reply) != SR__STORE_MAGIC || reply[4] != SR__ST_OK) goto fail;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
fail:
    close(fd);
    return -1;
}

static void usage(void) {
    fprintf(stderr, "usage: store_load --port P --token TOKEN [--host 127.0.0.1] [--conns 512] [--depth 2] "
                    "[--keys 256] [--seconds 60] [--rate-file FILE]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1", *token = NULL, *rate_file = NULL;
    int port = 0, nconns = 512, depth = 2, nkeys = 256;
    double seconds = 60;
    static const struct option opts[] = {{"host", 1, 0, 'h'},      {"port", 1, 0, 'p'},  {"token", 1, 0, 't'},
                                         {"conns", 1, 0, 'c'},     {"depth", 1, 0, 'd'}, {"seconds", 1, 0, 's'},
                                         {"rate-file", 1, 0, 'r'}, {"keys", 1, 0, 'k'},  {0, 0, 0, 0}};
    for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (o) {
        case 'h': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 't': token = optarg; break;
        case 'c': nconns = atoi(optarg); break;
        case 'd': depth = atoi(optarg); break;
        case 's': seconds = atof(optarg); break;
        case 'r': rate_file = optarg; break;
        case 'k': nkeys = atoi(optarg); break;
        default: usage();
        }
    }
    if (!token || port <= 0 || port > 65535 || nconns < 1 || nconns > 16384 || depth < 1 || depth > 64 || nkeys < 1 ||
        nkeys > 4096 || !(seconds > 0) || optind != argc)
        usage();
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    client *cs = calloc((size_t)nconns, sizeof *cs);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (!cs || ep < 0) {
        fprintf(stderr, "store_load: %s\n", cs ? strerror(errno) : "out of memory");
        return 1;
    }
    /* the connections, once the server answers (its agent may still be starting) */
    double t0 = now_s();
    int open = 0;
    while (open < nconns) {
        int fd = open_client(host, port, token);
        if (fd < 0) {
            if (open || now_s() - t0 > 10) break;
            usleep(50000);
            continue;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        cs[open].fd = fd;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cs[open]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            break;
        }
        open++;
    }
    if (!open) {
        fprintf(stderr, "store_load: no connection to %s:%d within 10 s\n", host, port);
        return 1;
    }
    /* the request: a CHECK naming one key that exists KEYS times, answered by a bare OK header
       (KEYS lookups for the server, one short read for this side) */
    int ctl = open_client(host, port, token);
    const char *set_items[2] = {"store_load/key", "1"};
    unsigned char setmsg[64], reply[SR__STORE_HEADER];
    size_t setlen = encode(setmsg, SR__OP_SET, set_items, 2);
    if (ctl < 0 || write_all(ctl, setmsg, setlen) != 0 || read(ctl, reply, sizeof reply) != (ssize_t)sizeof reply) {
        fprintf(stderr, "store_load: cannot set store_load/key at %s:%d\n", host, port);
        return 1;
    }
    close(ctl);
    const char **items = calloc((size_t)nkeys, sizeof *items);
    unsigned char *check = malloc(SR__STORE_HEADER + (size_t)nkeys * 32);
    if (!items || !check) {
        fprintf(stderr, "store_load: out of memory\n");
        return 1;
    }
    for (int i = 0; i < nkeys; i++) items[i] = set_items[0];
    size_t glen = encode(check, SR__OP_CHECK, items, nkeys);
    unsigned char *burst = malloc((size_t)depth * glen);
    if (!burst) {
        fprintf(stderr, "store_load: out of memory\n");
        return 1;
    }
    for (int d = 0; d < depth; d++) memcpy(burst + (size_t)d * glen, check, glen);
    for (int i = 0; i < open; i++)
        if (write_all(cs[i].fd, burst, (size_t)depth * glen) != 0) close(cs[i].fd), cs[i].fd = -1;

    unsigned long long answered = 0;
    int live = open;
    double start = now_s(), next_rate = start + 1;
    struct epoll_event evs[256];
    while (live > 0 && now_s() - start < seconds) {
        int k = epoll_wait(ep, evs, 256, 100);
        for (int i = 0; i < k; i++) {
            client *c = evs[i].data.ptr;
            if (c->fd < 0) continue;
            ssize_t r = read(c->fd, c->in, sizeof c->in);
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (r <= 0) {
                close(c->fd), c->fd = -1, live--;
                continue;
            }
            /* each answer is a bare header: counted, not parsed */
            c->n += (size_t)r;
            size_t replies = c->n / SR__STORE_HEADER;
            c->n %= SR__STORE_HEADER;
            answered += replies;
            /* as many new requests as answers came: DEPTH stay in flight */
            if (replies && write_all(c->fd, burst, replies * glen) != 0) close(c->fd), c->fd = -1, live--;
        }
        double t = now_s();
        if (rate_file && t >= next_rate) {
            next_rate = t + 1;
            char tmp[4096];
            snprintf(tmp, sizeof tmp, "%s.tmp", rate_file);
            FILE *f = fopen(tmp, "w");
            if (f) {
                fprintf(f, "%llu\n", answered);
                if (fclose(f) == 0) rename(tmp, rate_file);
            }
        }
    }
    double took = now_s() - start;
    printf("store_load: %d connections, %.0f requests/s over %.1f s%s\n", open, (double)answered / took, took,
           live ? "" : " (the server closed every connection)");
    for (int i = 0; i < open; i++)
        if (cs[i].fd >= 0) close(cs[i].fd);
    free(cs), free(items), free(check), free(burst);
    close(ep);
    return 0;
}
