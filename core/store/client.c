#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/strbuf.h"
#include "store/client_internal.h"
#include "store/store.h"
#include "store/wire.h"

static int send_request(sr__store *c, unsigned op, uint32_t n, const void *const *items, const uint32_t *lens) {
    sr__buf b = {0};
    unsigned char h[SR__STORE_HEADER] = {0};
    sr__store_put_head(h, op, c->channel, n);
    sr__buf_add(&b, (const char *)h, sizeof h);
    for (uint32_t i = 0; i < n; i++) {
        unsigned char l[4];
        sr__put_u32(l, lens[i]);
        sr__buf_add(&b, (const char *)l, 4);
        sr__buf_add(&b, items[i], lens[i]);
    }
    if (b.oom) {
        snprintf(c->error, sizeof c->error, "out of memory for a store request of %u items", (unsigned)n);
        sr__buf_free(&b);
        return -1;
    }
    if (c->link) {
        int rc = sr__link_send(c, b.s, b.n, 1);
        sr__buf_free(&b);
        return rc;
    }
    size_t off = 0;
    while (off < b.n) {
        ssize_t w = send(c->fd, b.s + off, b.n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            c->lost = 1;
            snprintf(c->error, sizeof c->error, "store connection lost while sending: %s", strerror(errno));
            sr__buf_free(&b);
            return -1;
        }
        off += (size_t)w;
    }
    sr__buf_free(&b);
    return 0;
}

/* Reads one reply into c->msg; -1 on a lost connection or a malformed reply. */
static int read_reply(sr__store *c) {
    if (c->link && sr__link_await(c) != 0) return -1; /* then c->in holds the reply, whole */
    if (c->consumed) {                                /* drop the previous reply */
        memmove(c->in.s, c->in.s + c->consumed, c->in.n - c->consumed);
        c->in.n -= c->consumed;
        c->consumed = 0;
    }
    while (1) {
        long used = c->in.n ? sr__store_parse((const unsigned char *)c->in.s, c->in.n, c->msg) : 0;
        if (used == -2) {
            snprintf(c->error, sizeof c->error, "out of memory for the items of a reply from the store");
            return -1;
        }
        if (used < 0) {
            snprintf(c->error, sizeof c->error, "malformed reply from the store");
            return -1;
        }
        if (used > 0) {
            c->consumed = (size_t)used;
            return 0;
        }
        if (c->link) {
            snprintf(c->error, sizeof c->error, "malformed reply from the store");
            return -1;
        }
        char buf[65536];
        ssize_t r = recv(c->fd, buf, sizeof buf, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            c->lost = 1;
            snprintf(c->error, sizeof c->error, "store connection closed (%s)", r ? strerror(errno) : "by the server");
            return -1;
        }
        sr__buf_add(&c->in, buf, (size_t)r);
        if (c->in.oom) {
            snprintf(c->error, sizeof c->error, "out of memory for a reply from the store");
            return -1;
        }
    }
}

/* An ERROR reply's reason into c->error ("the store ran out of memory", a wrong token); -1. */
static int refused(sr__store *c) {
    snprintf(c->error, sizeof c->error, "store refused the request: %.*s", c->msg->nitems ? (int)c->msg->len[0] : 0,
             c->msg->nitems ? (const char *)c->msg->item[0] : "");
    return -1;
}

static int call(sr__store *c, unsigned op, uint32_t n, const void *const *items, const uint32_t *lens) {
    if (send_request(c, op, n, items, lens) != 0 || read_reply(c) != 0) return -1;
    if (c->msg->op_or_status == SR__ST_ERROR) return refused(c);
    return (int)c->msg->op_or_status;
}

/* connect() within timeout_ms: a host that vanished from its subnet (its address still in the ARP
   cache) would otherwise hold a blocking connect for the kernel's SYN retries, a minute or two,
   whatever the caller's timeout.  0, or -1 with errno. */
static int connect_within(int fd, const struct sockaddr *addr, socklen_t len, int timeout_ms) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return -1;
    int rc = connect(fd, addr, len);
    if (rc != 0 && errno == EINPROGRESS) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int ready;
        while ((ready = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {}
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (ready == 0) errno = ETIMEDOUT, rc = -1;
        else if (ready > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0)
            rc = soerr ? (errno = soerr, -1) : 0;
        else rc = -1;
    }
    int saved = errno;
    if (fcntl(fd, F_SETFL, flags) != 0 && rc == 0) return -1;
    errno = saved;
    return rc;
}

static int dial(const char *host, int port, int timeout_ms, char *err, size_t errlen) {
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    int rc = getaddrinfo(host, ports, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -2; /* not worth retrying */
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect_within(fd, res->ai_addr, res->ai_addrlen, timeout_ms) != 0) {
        snprintf(err, errlen, "cannot connect to the store at %s:%d: %s", host, port, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

sr__store *sr__store_connect(const char *host, int port, const char *token, double timeout_s, char *err,
                             size_t errlen) {
    double deadline = sr__now_s() + timeout_s;
    int fd, delay_ms = 2;
    /* node 0's agent may start later than this one: retry until the timeout */
    /* each try within what is left of the timeout (at least 100 ms) */
    while ((fd = dial(host, port, (int)(deadline - sr__now_s() > 0.1 ? (deadline - sr__now_s()) * 1000 : 100), err,
                      errlen)) == -1 &&
           sr__now_s() < deadline) {
        usleep((useconds_t)delay_ms * 1000);
        if (delay_ms < 200) delay_ms *= 2;
    }
    if (fd < 0) {
        if (fd == -1) {
            size_t used = strlen(err);
            snprintf(err + used, errlen - used, " (gave up after %gs: is node 0's shardrun running?)", timeout_s);
            errno = ETIMEDOUT; /* the caller tells "nobody answered" from a refusal */
        }
        return NULL;
    }
    sr__store *c = sr__calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory for a store connection");
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->msg = &c->msg_;
    c->event_fd = -1;
    const void *items[1] = {token};
    uint32_t lens[1] = {(uint32_t)strlen(token)};
    if (call(c, SR__OP_HELLO, 1, items, lens) != SR__ST_OK) {
        snprintf(err, errlen, "store at %s:%d: %s", host, port, c->error);
        int lost = c->lost;
        sr__store_close(c);
        errno = lost ? ECONNRESET : EACCES; /* the server went away, or refused (its token, its memory) */
        return NULL;
    }
    return c;
}

sr__store_link *sr__store_link_connect(const char *host, int port, const char *token, double timeout_s, char *err,
                                       size_t errlen) {
    sr__store *first = sr__store_connect(host, port, token, timeout_s, err, errlen);
    if (!first) return NULL; /* errno says why, as sr__store_connect's callers expect */
    /* the connection, authenticated on channel 0, becomes the link's */
    sr__store_link *l = sr__link_start(first->fd, err, errlen);
    if (l) first->fd = -1;
    int saved = errno;
    sr__store_close(first);
    errno = saved;
    return l;
}

int sr__store_set(sr__store *c, const char *key, const void *value, size_t len) {
    const void *items[2] = {key, value};
    uint32_t lens[2] = {(uint32_t)strlen(key), (uint32_t)len};
    return call(c, SR__OP_SET, 2, items, lens) == SR__ST_OK ? 0 : -1;
}

/* Item i of the last reply, malloc'ed and NUL-terminated, into *value. */
static int copy_value(sr__store *c, uint32_t i, void **value, size_t *len) {
    *len = c->msg->len[i];
    if (!(*value = sr__malloc(*len + 1))) {
        snprintf(c->error, sizeof c->error, "out of memory for a store value of %zu bytes", *len);
        return -1;
    }
    memcpy(*value, c->msg->item[i], *len);
    ((char *)*value)[*len] = 0;
    return 0;
}

int sr__store_get(sr__store *c, const char *key, void **value, size_t *len) {
    const void *items[1] = {key};
    uint32_t lens[1] = {(uint32_t)strlen(key)};
    int st = call(c, SR__OP_GET, 1, items, lens);
    if (st == SR__ST_NOTFOUND) return 1;
    if (st != SR__ST_OK || c->msg->nitems != 1) return -1;
    return copy_value(c, 0, value, len);
}

long long sr__store_add(sr__store *c, const char *key, long long delta) {
    unsigned char d[8];
    sr__put_i64(d, delta);
    const void *items[2] = {key, d};
    uint32_t lens[2] = {(uint32_t)strlen(key), 8};
    if (call(c, SR__OP_ADD, 2, items, lens) != SR__ST_OK || c->msg->nitems != 1 || c->msg->len[0] != 8) return -1;
    return sr__get_i64(c->msg->item[0]);
}

/* Sends op with `head` leading items (nhead of them) and then the keys. */
static int keys_request(sr__store *c, unsigned op, const void *const *head, const uint32_t *hlens, int nhead,
                        const char *const *keys, int n) {
    const void **items = sr__calloc((size_t)(n + nhead), sizeof *items);
    uint32_t *lens = sr__calloc((size_t)(n + nhead), sizeof *lens);
    int rc = -1;
    if (items && lens) {
        for (int i = 0; i < nhead; i++) items[i] = head[i], lens[i] = hlens[i];
        for (int i = 0; i < n; i++) items[nhead + i] = keys[i], lens[nhead + i] = (uint32_t)strlen(keys[i]);
        rc = send_request(c, op, (uint32_t)(n + nhead), items, lens);
    } else {
        snprintf(c->error, sizeof c->error, "out of memory for a store request on %d keys", n);
    }
    free(items);
    free(lens);
    return rc;
}

static int wait_request(sr__store *c, long long timeout_ms, const char *const *keys, int n) {
    unsigned char t[8];
    sr__put_i64(t, timeout_ms);
    const void *head[1] = {t};
    uint32_t hlens[1] = {8};
    return keys_request(c, SR__OP_WAIT, head, hlens, 1, keys, n);
}

/* A TIMEOUT reply's keys, comma-separated, into missing. */
static void list_missing(const sr__store *c, char *missing, size_t mlen) {
    size_t used = 0;
    if (mlen) missing[0] = 0;
    for (uint32_t i = 0; i < c->msg->nitems && used < mlen; i++)
        used += (size_t)snprintf(missing + used, mlen - used, "%s%.*s", i ? "," : "", (int)c->msg->len[i],
                                 (const char *)c->msg->item[i]);
}

static long long timeout_ms_of(double timeout_s) { return timeout_s < 0 ? -1 : (long long)(timeout_s * 1000); }

int sr__store_wait(sr__store *c, const char *const *keys, int n, double timeout_s, char *missing, size_t mlen) {
    if (wait_request(c, timeout_ms_of(timeout_s), keys, n) != 0 || read_reply(c) != 0) return -1;
    if (c->msg->op_or_status == SR__ST_OK) return 0;
    if (c->msg->op_or_status == SR__ST_ERROR) return refused(c);
    if (c->msg->op_or_status != SR__ST_TIMEOUT) {
        snprintf(c->error, sizeof c->error, "malformed wait reply from the store");
        return -1;
    }
    list_missing(c, missing, mlen);
    return 1;
}

int sr__store_check(sr__store *c, const char *const *keys, int n) {
    if (keys_request(c, SR__OP_CHECK, NULL, NULL, 0, keys, n) != 0 || read_reply(c) != 0) return -1;
    if (c->msg->op_or_status == SR__ST_ERROR) return refused(c);
    return c->msg->op_or_status == SR__ST_OK ? 1 : c->msg->op_or_status == SR__ST_NOTFOUND ? 0 : -1;
}

static int fetch(sr__store *c, const char *const *keys, int n, uint32_t piece, uint32_t pieces, double timeout_s,
                 void **values, size_t *lens, char *missing, size_t mlen) {
    unsigned char t[8], p[8];
    sr__put_i64(t, timeout_ms_of(timeout_s));
    sr__put_u32(p, piece), sr__put_u32(p + 4, pieces);
    const void *head[2] = {t, p};
    uint32_t hlens[2] = {8, 8};
    if (keys_request(c, SR__OP_FETCH, head, hlens, 2, keys, n) != 0 || read_reply(c) != 0) return -1;
    unsigned st = c->msg->op_or_status;
    if (st == SR__ST_TIMEOUT) {
        list_missing(c, missing, mlen);
        return 1;
    }
    if (st == SR__ST_ERROR) return refused(c);
    if (st != SR__ST_OK || c->msg->nitems != (uint32_t)n) {
        snprintf(c->error, sizeof c->error, "malformed fetch reply from the store");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (copy_value(c, (uint32_t)i, &values[i], &lens[i]) != 0) {
            while (i-- > 0) free(values[i]), values[i] = NULL;
            return -1;
        }
    return 0;
}

int sr__store_fetch(sr__store *c, const char *const *keys, int n, double timeout_s, void **values, size_t *lens,
                    char *missing, size_t mlen) {
    return fetch(c, keys, n, 0, 0, timeout_s, values, lens, missing, mlen);
}

int sr__store_fetch_pieces(sr__store *c, const char *const *keys, int n, int piece, int pieces, double timeout_s,
                           void **values, size_t *lens, char *missing, size_t mlen) {
    if (pieces < 1 || piece < 0 || piece >= pieces) {
        snprintf(c->error, sizeof c->error, "piece %d of %d: expected 0 <= piece < pieces", piece, pieces);
        return -1;
    }
    return fetch(c, keys, n, (uint32_t)piece, (uint32_t)pieces, timeout_s, values, lens, missing, mlen);
}

int sr__store_wait_send(sr__store *c, const char *key) {
    if (c->link && sr__link_event_fd(c) < 0) return -1;
    return wait_request(c, -1, &key, 1);
}

int sr__store_fd(const sr__store *c) { return c->link ? c->event_fd : c->fd; }

const char *sr__store_error(const sr__store *c) { return c->error; }

int sr__store_set_io_timeout(sr__store *c, double timeout_s) {
    if (c->link) {
        c->io_timeout_s = timeout_s > 0 ? timeout_s : 0;
        return 0;
    }
    struct timeval tv = {(time_t)timeout_s, (suseconds_t)((timeout_s - (double)(time_t)timeout_s) * 1e6)};
    if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
        snprintf(c->error, sizeof c->error, "cannot set the store connection's timeout: %s", strerror(errno));
        return -1;
    }
    return 0;
}

void sr__store_close(sr__store *c) {
    if (!c) return;
    if (c->link) sr__link_close_channel(c);
    else if (c->fd >= 0) close(c->fd);
    sr__buf_free(&c->in);
    sr__store_msg_free(&c->msg_);
    free(c);
}
