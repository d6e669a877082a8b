#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "store/store.h"
#include "store/wire.h"

#define MAX_CONNS 4096

typedef struct kv {
    char *key;
    char *value;
    size_t len;
} kv;

typedef struct conn {
    int fd;
    int authed;
    sr_buf in, out;
    /* a pending WAIT: its keys and deadline (ms since the epoch of now_ms; -1 forever) */
    char **wait_keys;
    uint32_t nwait;
    long long deadline;
} conn;

struct sr_store_server {
    int listen_fd;
    int port;
    char *token;
    kv *kvs;
    size_t nkv, capkv;
    conn *conns[MAX_CONNS];
    int nconns;
    unsigned long rejected;
    sr_store_msg msg; /* parse scratch (large: not on the stack) */
};

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static kv *find(const sr_store_server *s, const char *key, size_t klen) {
    for (size_t i = 0; i < s->nkv; i++)
        if (strlen(s->kvs[i].key) == klen && !memcmp(s->kvs[i].key, key, klen)) return &s->kvs[i];
    return NULL;
}

static void put(sr_store_server *s, const char *key, size_t klen, const void *v, size_t len) {
    kv *e = find(s, key, klen);
    if (!e) {
        if (s->nkv == s->capkv) {
            s->capkv = s->capkv ? 2 * s->capkv : 64;
            s->kvs = realloc(s->kvs, s->capkv * sizeof *s->kvs);
        }
        e = &s->kvs[s->nkv++];
        e->key = strndup(key, klen);
    } else {
        free(e->value);
    }
    e->value = malloc(len + 1);
    memcpy(e->value, v, len);
    e->value[len] = 0;
    e->len = len;
}

static void reply(conn *c, unsigned status, uint32_t nitems, const void *const *items, const uint32_t *lens) {
    unsigned char h[SR_STORE_HEADER] = {0};
    sr__put_u32(h, SR_STORE_MAGIC);
    h[4] = (unsigned char)status;
    sr__put_u32(h + 8, nitems);
    sr__buf_add(&c->out, (const char *)h, sizeof h);
    for (uint32_t i = 0; i < nitems; i++) {
        unsigned char l[4];
        sr__put_u32(l, lens[i]);
        sr__buf_add(&c->out, (const char *)l, 4);
        sr__buf_add(&c->out, items[i], lens[i]);
    }
}

static void clear_wait(conn *c) {
    for (uint32_t i = 0; i < c->nwait; i++) free(c->wait_keys[i]);
    free(c->wait_keys);
    c->wait_keys = NULL;
    c->nwait = 0;
}

/* Answers a pending wait if its keys exist (or, when `expire`, if its deadline passed). */
static void settle_wait(sr_store_server *s, conn *c, int expire) {
    if (!c->wait_keys) return;
    uint32_t missing = 0;
    const void *items[SR_STORE_MAX_ITEMS];
    uint32_t lens[SR_STORE_MAX_ITEMS];
    for (uint32_t i = 0; i < c->nwait; i++)
        if (!find(s, c->wait_keys[i], strlen(c->wait_keys[i]))) {
            items[missing] = c->wait_keys[i];
            lens[missing++] = (uint32_t)strlen(c->wait_keys[i]);
        }
    if (missing && !(expire && c->deadline >= 0 && now_ms() >= c->deadline)) return;
    reply(c, missing ? SR_ST_TIMEOUT : SR_ST_OK, missing, items, lens);
    clear_wait(c);
}

static void settle_all(sr_store_server *s, int expire) {
    for (int i = 0; i < s->nconns; i++) settle_wait(s, s->conns[i], expire);
}

static int valid_key(const unsigned char *k, uint32_t len) { return len > 0 && len <= SR_STORE_MAX_KEY && !memchr(k, 0, len); }

/* Serves one request; returns -1 when the connection must be closed. */
static int serve(sr_store_server *s, conn *c, const sr_store_msg *m) {
    const void *items[1];
    uint32_t lens[1];
    if (!c->authed) {
        if (m->op_or_status != SR_OP_HELLO || m->nitems != 1 || m->len[0] != strlen(s->token) ||
            memcmp(m->item[0], s->token, m->len[0]) != 0) {
            static const char msg[] = "wrong or missing token";
            items[0] = msg, lens[0] = sizeof msg - 1;
            reply(c, SR_ST_ERROR, 1, items, lens);
            return -1;
        }
        c->authed = 1;
        reply(c, SR_ST_OK, 0, NULL, NULL);
        return 0;
    }
    if (c->wait_keys) return -1; /* one request at a time: a wait is still pending */
    switch (m->op_or_status) {
    case SR_OP_SET:
        if (m->nitems != 2 || !valid_key(m->item[0], m->len[0])) return -1;
        put(s, (const char *)m->item[0], m->len[0], m->item[1], m->len[1]);
        reply(c, SR_ST_OK, 0, NULL, NULL);
        settle_all(s, 0);
        return 0;
    case SR_OP_GET: {
        if (m->nitems != 1 || !valid_key(m->item[0], m->len[0])) return -1;
        kv *e = find(s, (const char *)m->item[0], m->len[0]);
        if (!e) {
            reply(c, SR_ST_NOTFOUND, 0, NULL, NULL);
            return 0;
        }
        items[0] = e->value, lens[0] = (uint32_t)e->len;
        reply(c, SR_ST_OK, 1, items, lens);
        return 0;
    }
    case SR_OP_ADD: {
        if (m->nitems != 2 || !valid_key(m->item[0], m->len[0]) || m->len[1] != 8) return -1;
        kv *e = find(s, (const char *)m->item[0], m->len[0]);
        long long v = (e ? strtoll(e->value, NULL, 10) : 0) + sr__get_i64(m->item[1]);
        char text[32];
        int n = snprintf(text, sizeof text, "%lld", v);
        put(s, (const char *)m->item[0], m->len[0], text, (size_t)n);
        unsigned char out[8];
        sr__put_i64(out, v);
        items[0] = out, lens[0] = 8;
        reply(c, SR_ST_OK, 1, items, lens);
        settle_all(s, 0);
        return 0;
    }
    case SR_OP_WAIT:
    case SR_OP_CHECK: {
        uint32_t first = m->op_or_status == SR_OP_WAIT ? 1 : 0;
        if (m->nitems <= first || (first && m->len[0] != 8)) return -1;
        for (uint32_t i = first; i < m->nitems; i++)
            if (!valid_key(m->item[i], m->len[i])) return -1;
        if (m->op_or_status == SR_OP_CHECK) {
            int all = 1;
            for (uint32_t i = 0; i < m->nitems && all; i++) all = find(s, (const char *)m->item[i], m->len[i]) != NULL;
            reply(c, all ? SR_ST_OK : SR_ST_NOTFOUND, 0, NULL, NULL);
            return 0;
        }
        long long timeout = sr__get_i64(m->item[0]);
        c->nwait = m->nitems - 1;
        c->wait_keys = calloc(c->nwait, sizeof *c->wait_keys);
        for (uint32_t i = 0; i < c->nwait; i++) c->wait_keys[i] = strndup((const char *)m->item[i + 1], m->len[i + 1]);
        c->deadline = timeout < 0 ? -1 : now_ms() + timeout;
        settle_wait(s, c, 1);
        return 0;
    }
    }
    return -1; /* unknown op */
}

static void close_conn(sr_store_server *s, int idx) {
    conn *c = s->conns[idx];
    close(c->fd);
    clear_wait(c);
    sr__buf_free(&c->in);
    sr__buf_free(&c->out);
    free(c);
    s->conns[idx] = s->conns[--s->nconns];
}

static void accept_all(sr_store_server *s) {
    while (1) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        if (s->nconns == MAX_CONNS) {
            close(fd);
            s->rejected++;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn *c = calloc(1, sizeof *c);
        c->fd = fd;
        s->conns[s->nconns++] = c;
    }
}

/* Reads and serves; returns -1 when the connection is done (EOF, error, protocol violation). */
static int pump_in(sr_store_server *s, conn *c) {
    char buf[65536];
    while (1) {
        ssize_t n = read(c->fd, buf, sizeof buf);
        if (n == 0) return -1;
        if (n < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
        sr__buf_add(&c->in, buf, (size_t)n);
        while (c->in.n) {
            long used = sr__store_parse((const unsigned char *)c->in.s, c->in.n, &s->msg);
            if (used < 0) { s->rejected++; return -1; }
            if (used == 0) {
                if (c->in.n > SR_STORE_MAX_MESSAGE) { s->rejected++; return -1; }
                break;
            }
            if (serve(s, c, &s->msg) != 0) {
                s->rejected++;
                /* flush an error reply, best effort, before closing */
                if (c->out.n && write(c->fd, c->out.s, c->out.n) < 0) { /* the peer is gone anyway */ }
                return -1;
            }
            memmove(c->in.s, c->in.s + used, c->in.n - (size_t)used);
            c->in.n -= (size_t)used;
        }
    }
}

static int pump_out(conn *c) {
    while (c->out.n) {
        ssize_t n = write(c->fd, c->out.s, c->out.n);
        if (n < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
        memmove(c->out.s, c->out.s + n, c->out.n - (size_t)n);
        c->out.n -= (size_t)n;
    }
    return 0;
}

sr_store_server *sr__store_server_start(const char *bind_addr, int port, const char *token, char *err, size_t errlen) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return NULL;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = bind_addr ? inet_addr(bind_addr) : htonl(INADDR_ANY);
    socklen_t alen = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1024) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", bind_addr ? bind_addr : "0.0.0.0", port, strerror(errno));
        close(fd);
        return NULL;
    }
    sr_store_server *s = calloc(1, sizeof *s);
    s->listen_fd = fd;
    s->port = ntohs(a.sin_port);
    s->token = strdup(token);
    return s;
}

int sr__store_server_port(const sr_store_server *s) { return s->port; }

int sr__store_server_pollfds(sr_store_server *s, struct pollfd *pfds, int max) {
    int n = 0;
    if (max > 0) pfds[n++] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
    for (int i = 0; i < s->nconns && n < max; i++)
        pfds[n++] = (struct pollfd){.fd = s->conns[i]->fd, .events = (short)(POLLIN | (s->conns[i]->out.n ? POLLOUT : 0))};
    return n;
}

void sr__store_server_handle(sr_store_server *s, const struct pollfd *pfds, int n) {
    for (int p = 0; p < n; p++) {
        if (!pfds[p].revents) continue;
        if (pfds[p].fd == s->listen_fd) {
            accept_all(s);
            continue;
        }
        for (int i = 0; i < s->nconns; i++) {
            conn *c = s->conns[i];
            if (c->fd != pfds[p].fd) continue;
            int done = 0;
            if (pfds[p].revents & (POLLIN | POLLHUP | POLLERR)) done = pump_in(s, c) != 0;
            if (!done) done = pump_out(c) != 0;
            if (done) close_conn(s, i);
            break;
        }
    }
    settle_all(s, 1);
    for (int i = 0; i < s->nconns; i++) pump_out(s->conns[i]);
}

int sr__store_server_timeout_ms(const sr_store_server *s) {
    long long next = -1, t = now_ms();
    for (int i = 0; i < s->nconns; i++) {
        const conn *c = s->conns[i];
        if (!c->wait_keys || c->deadline < 0) continue;
        long long d = c->deadline > t ? c->deadline - t : 0;
        if (next < 0 || d < next) next = d;
    }
    return next > 1 << 30 ? 1 << 30 : (int)next;
}

int sr__store_server_waiting(const sr_store_server *s, const char *key) {
    for (int i = 0; i < s->nconns; i++)
        for (uint32_t k = 0; k < s->conns[i]->nwait; k++)
            if (!strcmp(s->conns[i]->wait_keys[k], key)) return 1;
    return 0;
}

const char *sr__store_server_get(const sr_store_server *s, const char *key, size_t *len) {
    kv *e = find(s, key, strlen(key));
    if (e && len) *len = e->len;
    return e ? e->value : NULL;
}

void sr__store_server_set(sr_store_server *s, const char *key, const void *value, size_t len) {
    put(s, key, strlen(key), value, len);
    settle_all(s, 0);
    for (int i = 0; i < s->nconns; i++) pump_out(s->conns[i]);
}

unsigned long sr__store_server_rejected(const sr_store_server *s) { return s->rejected; }

void sr__store_server_free(sr_store_server *s) {
    if (!s) return;
    while (s->nconns) close_conn(s, 0);
    for (size_t i = 0; i < s->nkv; i++) free(s->kvs[i].key), free(s->kvs[i].value);
    free(s->kvs);
    free(s->token);
    close(s->listen_fd);
    free(s);
}
