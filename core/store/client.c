#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "store/store.h"
#include "store/wire.h"

struct sr_store {
    int fd;
    char error[512];
    sr_buf in;
    size_t consumed; /* bytes of `in` belonging to the last reply */
    sr_store_msg *msg;
};

static int send_request(sr_store *c, unsigned op, uint32_t n, const void *const *items, const uint32_t *lens) {
    sr_buf b = {0};
    unsigned char h[SR_STORE_HEADER] = {0};
    sr__put_u32(h, SR_STORE_MAGIC);
    h[4] = (unsigned char)op;
    sr__put_u32(h + 8, n);
    sr__buf_add(&b, (const char *)h, sizeof h);
    for (uint32_t i = 0; i < n; i++) {
        unsigned char l[4];
        sr__put_u32(l, lens[i]);
        sr__buf_add(&b, (const char *)l, 4);
        sr__buf_add(&b, items[i], lens[i]);
    }
    size_t off = 0;
    while (off < b.n) {
        ssize_t w = send(c->fd, b.s + off, b.n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
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
static int read_reply(sr_store *c) {
    if (c->consumed) { /* drop the previous reply */
        memmove(c->in.s, c->in.s + c->consumed, c->in.n - c->consumed);
        c->in.n -= c->consumed;
        c->consumed = 0;
    }
    while (1) {
        long used = c->in.n ? sr__store_parse((const unsigned char *)c->in.s, c->in.n, c->msg) : 0;
        if (used < 0) {
            snprintf(c->error, sizeof c->error, "malformed reply from the store");
            return -1;
        }
        if (used > 0) {
            c->consumed = (size_t)used;
            return 0;
        }
        char buf[65536];
        ssize_t r = recv(c->fd, buf, sizeof buf, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            snprintf(c->error, sizeof c->error, "store connection closed (%s)", r ? strerror(errno) : "by the server");
            return -1;
        }
        sr__buf_add(&c->in, buf, (size_t)r);
    }
}

static int call(sr_store *c, unsigned op, uint32_t n, const void *const *items, const uint32_t *lens) {
    if (send_request(c, op, n, items, lens) != 0 || read_reply(c) != 0) return -1;
    if (c->msg->op_or_status == SR_ST_ERROR) {
        snprintf(c->error, sizeof c->error, "store refused the request: %.*s", c->msg->nitems ? (int)c->msg->len[0] : 0,
                 c->msg->nitems ? (const char *)c->msg->item[0] : "");
        return -1;
    }
    return (int)c->msg->op_or_status;
}

static int dial(const char *host, int port, char *err, size_t errlen) {
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    int rc = getaddrinfo(host, ports, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -2; /* not worth retrying */
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
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

sr_store *sr__store_connect(const char *host, int port, const char *token, double timeout_s, char *err, size_t errlen) {
    double deadline = sr__now_s() + timeout_s;
    int fd, delay_ms = 2;
    /* node 0's agent may start later than this one: retry until the timeout */
    while ((fd = dial(host, port, err, errlen)) == -1 && sr__now_s() < deadline) {
        usleep((useconds_t)delay_ms * 1000);
        if (delay_ms < 200) delay_ms *= 2;
    }
    if (fd < 0) {
        if (fd == -1) {
            size_t used = strlen(err);
            snprintf(err + used, errlen - used, " (gave up after %gs: is node 0's shardrun running?)", timeout_s);
        }
        return NULL;
    }
    sr_store *c = calloc(1, sizeof *c);
    c->fd = fd;
    c->msg = malloc(sizeof *c->msg);
    const void *items[1] = {token};
    uint32_t lens[1] = {(uint32_t)strlen(token)};
    if (call(c, SR_OP_HELLO, 1, items, lens) != SR_ST_OK) {
        snprintf(err, errlen, "store at %s:%d: %s", host, port, c->error);
        sr__store_close(c);
        return NULL;
    }
    return c;
}

int sr__store_set(sr_store *c, const char *key, const void *value, size_t len) {
    const void *items[2] = {key, value};
    uint32_t lens[2] = {(uint32_t)strlen(key), (uint32_t)len};
    return call(c, SR_OP_SET, 2, items, lens) == SR_ST_OK ? 0 : -1;
}

int sr__store_get(sr_store *c, const char *key, void **value, size_t *len) {
    const void *items[1] = {key};
    uint32_t lens[1] = {(uint32_t)strlen(key)};
    int st = call(c, SR_OP_GET, 1, items, lens);
    if (st == SR_ST_NOTFOUND) return 1;
    if (st != SR_ST_OK || c->msg->nitems != 1) return -1;
    *len = c->msg->len[0];
    *value = malloc(*len + 1);
    memcpy(*value, c->msg->item[0], *len);
    ((char *)*value)[*len] = 0;
    return 0;
}

long long sr__store_add(sr_store *c, const char *key, long long delta) {
    unsigned char d[8];
    sr__put_i64(d, delta);
    const void *items[2] = {key, d};
    uint32_t lens[2] = {(uint32_t)strlen(key), 8};
    if (call(c, SR_OP_ADD, 2, items, lens) != SR_ST_OK || c->msg->nitems != 1 || c->msg->len[0] != 8) return -1;
    return sr__get_i64(c->msg->item[0]);
}

static int keys_request(sr_store *c, unsigned op, long long timeout_ms, const char *const *keys, int n) {
    int first = op == SR_OP_WAIT;
    const void **items = calloc((size_t)n + 1, sizeof *items);
    uint32_t *lens = calloc((size_t)n + 1, sizeof *lens);
    unsigned char t[8];
    sr__put_i64(t, timeout_ms);
    if (first) items[0] = t, lens[0] = 8;
    for (int i = 0; i < n; i++) items[first + i] = keys[i], lens[first + i] = (uint32_t)strlen(keys[i]);
    int rc = send_request(c, op, (uint32_t)(n + first), items, lens);
    free(items);
    free(lens);
    return rc;
}

int sr__store_wait(sr_store *c, const char *const *keys, int n, double timeout_s, char *missing, size_t mlen) {
    if (keys_request(c, SR_OP_WAIT, timeout_s < 0 ? -1 : (long long)(timeout_s * 1000), keys, n) != 0 || read_reply(c) != 0)
        return -1;
    if (c->msg->op_or_status == SR_ST_OK) return 0;
    if (c->msg->op_or_status != SR_ST_TIMEOUT) return -1;
    size_t used = 0;
    if (mlen) missing[0] = 0;
    for (uint32_t i = 0; i < c->msg->nitems && used < mlen; i++)
        used += (size_t)snprintf(missing + used, mlen - used, "%s%.*s", i ? "," : "", (int)c->msg->len[i],
                                 (const char *)c->msg->item[i]);
    return 1;
}

int sr__store_check(sr_store *c, const char *const *keys, int n) {
    if (keys_request(c, SR_OP_CHECK, 0, keys, n) != 0 || read_reply(c) != 0) return -1;
    return c->msg->op_or_status == SR_ST_OK ? 1 : c->msg->op_or_status == SR_ST_NOTFOUND ? 0 : -1;
}

int sr__store_wait_send(sr_store *c, const char *key) { return keys_request(c, SR_OP_WAIT, -1, &key, 1); }

int sr__store_fd(const sr_store *c) { return c->fd; }

const char *sr__store_error(const sr_store *c) { return c->error; }

void sr__store_close(sr_store *c) {
    if (!c) return;
    close(c->fd);
    sr__buf_free(&c->in);
    free(c->msg);
    free(c);
}
