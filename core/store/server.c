/*
 * The rendezvous store's server (store/store.h has the lifecycle, store/wire.h the protocol).
 *
 * It has to serve thousands of agents and ranks, so no request or event costs more than the keys
 * it names:
 *   - keys live in a hash table (chained, doubled when full);
 *   - a pending wait is filed under each key it still misses, and counts them: a set wakes only
 *     the waits filed under its key, and answers those whose count reaches zero;
 *   - waits with a deadline sit in a binary heap, so expiring them looks at the ones due only;
 *   - connections are watched with epoll: the caller's poll sees one descriptor, and a turn
 *     serves the connections that have something to read or write, not all of them;
 *   - a connection carries channels (wire.h): each is served as a connection of its own was (one
 *     request at a time, its own pending wait), so a socket holds its channels and the waiters and
 *     the deadline heap hold channels.  Channel 0 lives inside its socket: a rank's connection,
 *     which uses no other, costs no allocation more than it did before channels;
 *   - replies are queued on the connections that got one and flushed once per turn;
 *   - a turn serves a few batches of ready connections, a few reads each, and returns: however
 *     many clients keep it busy, the caller's loop (node 0's supervisor: its signals, its workers,
 *     the run's verdict) runs between two turns.  What is left stays ready (the caller's next poll
 *     returns at once), and epoll hands level-triggered connections out in turn, so none starves.
 * A key that a wait names before it exists gets an entry without a value (a placeholder) that
 * holds its waiters; keys are never removed.
 */
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
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/hash64.h"
#include "base/strbuf.h"
#include "store/store.h"
#include "store/wire.h"

/* Connections at once (each agent holds one, each rank one): beyond it a new one is closed at
   once and counted as rejected. */
#define MAX_CONNS 65536
/* One turn (sr__store_server_handle): at most SR__STORE_BATCHES batches of SR__STORE_BATCH ready
   connections, at most SR__STORE_READS reads of 64 KiB from each.  A few batches, not one: node 0's
   loop between two turns looks at every agent (rdzv_host.c), which a flood of requests (a rendezvous
   of thousands) would otherwise pay once per 256. */
#define SR__STORE_BATCH 256
#define SR__STORE_BATCHES 4
#define SR__STORE_READS 4

typedef struct sock sock;
typedef struct chan chan;

typedef struct entry {
    struct entry *next; /* in its hash bucket */
    uint64_t hash;
    char *key;
    uint32_t klen;
    int present; /* 0: a placeholder holding waiters only */
    char *value; /* NUL-terminated for convenience */
    size_t len;
    chan **waiters; /* channels whose pending wait misses this key (once per time it names it) */
    uint32_t nwaiters, capwaiters;
} entry;

/* One request stream of a connection (wire.h, "Channels"). */
struct chan {
    sock *sock; /* the connection it belongs to, where its replies are queued */
    uint32_t id;
    /* a pending WAIT or FETCH: the entries of its keys in request order, how many are still missing,
       its deadline (ms of now_ms; -1 forever) and its place in the deadline heap (-1: none) */
    unsigned wait_op;
    entry **wait_on;
    uint32_t nwait, nmissing;
    uint32_t piece, pieces; /* FETCH: which part of each value */
    long long deadline;
    int heap_idx;
};

/* One client connection. */
struct sock {
    int fd;
    int authed;
    int dead;     /* closed; freed at the end of the turn */
    int dirty;    /* on the server's list of connections with replies to send */
    int want_out; /* epoll also watches it for POLLOUT */
    sr__buf in, out;
    size_t in_off; /* bytes of `in` already served */
    chan ch0;      /* channel 0, open from HELLO to the connection's end */
    chan **chans;  /* the other open channels, in no order (an agent's 3; allocated at the first) */
    uint32_t nchans, capchans;
    sock *prev, *next; /* every live connection */
};

struct sr__store_server {
    int listen_fd, epfd;
    int port;
    char *token;
    entry **buckets;
    size_t nbuckets, nentries;
    sock *conns; /* live connections, a list */
    int nconns;
    chan **heap; /* pending waits with a deadline, earliest first */
    int nheap, capheap;
    sock **dirty;
    size_t ndirty, capdirty;
    sock *graveyard; /* closed this turn, freed at its end (events of the turn may still name them) */
    unsigned long rejected;
    unsigned long oom;          /* requests or connections refused for want of memory */
    int oom_pending;            /* a connection is marked out.oom but on no list: flush() looks for it */
    sr__store_msg msg;          /* parse scratch */
    sr__store_server_hook hook; /* sr__store_server_on_key */
    void *hook_ctx;
};

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- keys ---- */

static entry *lookup(const sr__store_server *s, const char *key, size_t klen) {
    if (!s->nbuckets) return NULL;
    uint64_t h = sr__fnv1a64(SR__FNV1A64_BASIS, key, klen);
    for (entry *e = s->buckets[h & (s->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && e->klen == klen && !memcmp(e->key, key, klen)) return e;
    return NULL;
}

static const entry *lookup_present(const sr__store_server *s, const char *key, size_t klen) {
    const entry *e = lookup(s, key, klen);
    return e && e->present ? e : NULL;
}

/* Doubles the bucket array when the table is full (load 1); keeps the old one when memory runs out
   (the chains only get longer). */
static void rehash(sr__store_server *s) {
    if (s->nentries < s->nbuckets) return;
    size_t nb = s->nbuckets ? 2 * s->nbuckets : 1024;
    entry **b = sr__calloc(nb, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < s->nbuckets; i++)
        for (entry *e = s->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = nb;
}

/* The key's entry, made (as a placeholder) when there is none; NULL when memory is exhausted. */
static entry *intern(sr__store_server *s, const char *key, size_t klen) {
    entry *e = lookup(s, key, klen);
    if (e) return e;
    rehash(s);
    if (!s->nbuckets) return NULL;
    e = sr__calloc(1, sizeof *e);
    if (!e || !(e->key = sr__strndup(key, klen))) {
        free(e);
        return NULL;
    }
    e->klen = (uint32_t)klen;
    e->hash = sr__fnv1a64(SR__FNV1A64_BASIS, key, klen);
    e->next = s->buckets[e->hash & (s->nbuckets - 1)];
    s->buckets[e->hash & (s->nbuckets - 1)] = e;
    s->nentries++;
    return e;
}

/* ---- replies ---- */

/* Tells the peer on fd that the store ran out of memory: a whole ERROR reply, made and sent
   without allocating (best effort: the connection is closed next, and a peer that is not reading
   only loses the reason). */
static void tell_oom(sr__store_server *s, int fd) {
    static const char why[] = "the store ran out of memory";
    unsigned char m[SR__STORE_HEADER + 4 + sizeof why - 1] = {0};
    sr__put_u32(m, SR__STORE_MAGIC);
    m[4] = SR__ST_ERROR;
    sr__put_u32(m + 8, 1);
    sr__put_u32(m + SR__STORE_HEADER, (uint32_t)(sizeof why - 1));
    memcpy(m + SR__STORE_HEADER + 4, why, sizeof why - 1);
    if (send(fd, m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) { /* the peer is gone anyway */
    }
    s->oom++;
}

static void mark_dirty(sr__store_server *s, sock *c) {
    if (c->dirty || c->dead) return;
    if (sr__grow((void **)&s->dirty, &s->capdirty, s->ndirty + 1, sizeof *s->dirty) != 0) {
        c->out.oom = 1; /* no room to remember it: flush() finds it and closes it */
        s->oom_pending = 1;
        return;
    }
    s->dirty[s->ndirty++] = c;
    c->dirty = 1;
}

/* Replies go on the connection's queue, each with the channel of the request it answers. */
static void reply_head(sr__store_server *s, sock *c, uint32_t channel, unsigned status, uint32_t nitems) {
    unsigned char h[SR__STORE_HEADER];
    sr__store_put_head(h, status, channel, nitems);
    sr__buf_add(&c->out, (const char *)h, sizeof h);
    mark_dirty(s, c);
}

static void reply_item(sock *c, const void *data, uint32_t len) {
    unsigned char l[4];
    sr__put_u32(l, len);
    sr__buf_add(&c->out, (const char *)l, 4);
    sr__buf_add(&c->out, data, len);
}

static void reply(sr__store_server *s, sock *c, uint32_t channel, unsigned status, uint32_t nitems,
                  const void *const *items, const uint32_t *lens) {
    reply_head(s, c, channel, status, nitems);
    for (uint32_t i = 0; i < nitems; i++) reply_item(c, items[i], lens[i]);
}

static void reply_error(sr__store_server *s, sock *c, uint32_t channel, const char *why) {
    const void *items[1] = {why};
    uint32_t lens[1] = {(uint32_t)strlen(why)};
    reply(s, c, channel, SR__ST_ERROR, 1, items, lens);
}

/* Piece `piece` of `pieces` equal parts of a value of len bytes (pieces 0: the whole value). */
static void piece_of(size_t len, uint32_t piece, uint32_t pieces, size_t *off, size_t *n) {
    if (pieces == 0) {
        *off = 0, *n = len;
        return;
    }
    size_t each = len / pieces;
    *off = each * piece, *n = each;
}

/* ---- pending waits ---- */

static void heap_swap(sr__store_server *s, int a, int b) {
    chan *t = s->heap[a];
    s->heap[a] = s->heap[b], s->heap[b] = t;
    s->heap[a]->heap_idx = a, s->heap[b]->heap_idx = b;
}

static void heap_fix(sr__store_server *s, int i) {
    while (i > 0 && s->heap[(i - 1) / 2]->deadline > s->heap[i]->deadline)
        heap_swap(s, i, (i - 1) / 2), i = (i - 1) / 2;
    while (1) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->nheap && s->heap[l]->deadline < s->heap[m]->deadline) m = l;
        if (r < s->nheap && s->heap[r]->deadline < s->heap[m]->deadline) m = r;
        if (m == i) return;
        heap_swap(s, i, m);
        i = m;
    }
}

static int heap_push(sr__store_server *s, chan *c) {
    size_t cap = (size_t)s->capheap;
    if (sr__grow((void **)&s->heap, &cap, (size_t)s->nheap + 1, sizeof *s->heap) != 0) return -1;
    s->capheap = (int)cap;
    c->heap_idx = s->nheap;
    s->heap[s->nheap++] = c;
    heap_fix(s, c->heap_idx);
    return 0;
}

static void heap_remove(sr__store_server *s, chan *c) {
    int i = c->heap_idx;
    if (i < 0) return;
    c->heap_idx = -1;
    if (i != --s->nheap) {
        s->heap[i] = s->heap[s->nheap];
        s->heap[i]->heap_idx = i;
        heap_fix(s, i);
    }
}

/* Takes c off the waiter list of every key it still misses, and forgets its wait. */
static void clear_wait(sr__store_server *s, chan *c) {
    for (uint32_t k = 0; k < c->nwait; k++) {
        entry *e = c->wait_on[k];
        if (e->present) continue;
        for (uint32_t i = 0; i < e->nwaiters; i++)
            if (e->waiters[i] == c) {
                e->waiters[i] = e->waiters[--e->nwaiters];
                break;
            }
        if (s->hook) s->hook(s->hook_ctx, e->key, e->klen);
    }
    heap_remove(s, c);
    free(c->wait_on);
    c->wait_on = NULL;
    c->nwait = c->nmissing = 0;
}

/* Answers c's pending wait: OK (with the values, for a FETCH) when nothing is missing, else
   TIMEOUT naming the missing keys. */
static void answer_wait(sr__store_server *s, chan *c) {
    sock *out = c->sock;
    if (c->nmissing) {
        reply_head(s, out, c->id, SR__ST_TIMEOUT, c->nmissing);
        for (uint32_t k = 0; k < c->nwait; k++)
            if (!c->wait_on[k]->present) reply_item(out, c->wait_on[k]->key, c->wait_on[k]->klen);
    } else if (c->wait_op == SR__OP_FETCH) {
        size_t total = SR__STORE_HEADER, off, n;
        for (uint32_t k = 0; k < c->nwait; k++)
            piece_of(c->wait_on[k]->len, c->piece, c->pieces, &off, &n), total += 4 + n;
        if (total > SR__STORE_MAX_MESSAGE) {
            reply_error(s, out, c->id, "the values fetched exceed a message (4 MiB): fetch fewer keys at once");
        } else {
            reply_head(s, out, c->id, SR__ST_OK, c->nwait);
            for (uint32_t k = 0; k < c->nwait; k++) {
                const entry *e = c->wait_on[k];
                piece_of(e->len, c->piece, c->pieces, &off, &n);
                reply_item(out, e->value + off, (uint32_t)n);
            }
        }
    } else {
        reply_head(s, out, c->id, SR__ST_OK, 0);
    }
    clear_wait(s, c);
}

/* Files a WAIT or FETCH under the keys it misses; answers at once when none is missing or it may
   not wait.  -1 when memory is exhausted. */
static int start_wait(sr__store_server *s, chan *c, unsigned op, long long timeout, const sr__store_msg *m,
                      uint32_t first) {
    c->wait_op = op;
    c->nwait = m->nitems - first;
    c->nmissing = 0;
    c->heap_idx = -1;
    if (!(c->wait_on = sr__calloc(c->nwait, sizeof *c->wait_on))) return c->nwait = 0, -1;
    for (uint32_t i = 0; i < c->nwait; i++) {
        entry *e = intern(s, (const char *)m->item[first + i], m->len[first + i]);
        if (!e) return c->nwait = i, clear_wait(s, c), -1;
        c->wait_on[i] = e;
        if (e->present) continue;
        size_t cap = e->capwaiters;
        if (sr__grow((void **)&e->waiters, &cap, (size_t)e->nwaiters + 1, sizeof *e->waiters) != 0)
            return c->nwait = i, clear_wait(s, c), -1;
        e->capwaiters = (uint32_t)cap;
        e->waiters[e->nwaiters++] = c;
        c->nmissing++;
        if (s->hook) s->hook(s->hook_ctx, e->key, e->klen);
    }
    if (!c->nmissing || timeout == 0) {
        answer_wait(s, c);
        return 0;
    }
    c->deadline = timeout < 0 ? -1 : now_ms() + timeout;
    if (c->deadline >= 0 && heap_push(s, c) != 0) return clear_wait(s, c), -1;
    return 0;
}

/* Sets a key and wakes the waits filed under it.  -1 when memory is exhausted (nothing changed). */
static int put(sr__store_server *s, const char *key, size_t klen, const void *v, size_t len) {
    entry *e = intern(s, key, klen);
    char *value = e ? sr__malloc(len + 1) : NULL;
    if (!value) return -1;
    memcpy(value, v, len);
    value[len] = 0;
    free(e->value);
    e->value = value;
    e->len = len;
    if (s->hook) s->hook(s->hook_ctx, e->key, e->klen);
    if (e->present) return 0; /* nobody waits on a key that exists */
    e->present = 1;
    chan **w = e->waiters;
    uint32_t n = e->nwaiters;
    e->waiters = NULL;
    e->nwaiters = e->capwaiters = 0;
    for (uint32_t i = 0; i < n; i++)
        if (--w[i]->nmissing == 0) answer_wait(s, w[i]);
    free(w);
    return 0;
}

/* ---- channels ---- */

/* Channel id of k when it is open (and its place in k->chans), else NULL. */
static chan *find_channel(sock *k, uint32_t id, uint32_t *at) {
    if (id == 0) return &k->ch0;
    for (uint32_t i = 0; i < k->nchans; i++)
        if (k->chans[i]->id == id) {
            if (at) *at = i;
            return k->chans[i];
        }
    return NULL;
}

/* Opens channel id (not 0, not open) on k at its first request: 0; -1 when k would hold more than
   SR__STORE_MAX_CHANNELS open channels, channel 0 among them; -2 when memory is exhausted. */
static int open_channel(sock *k, uint32_t id, chan **out) {
    if (1 + k->nchans + 1 > SR__STORE_MAX_CHANNELS) return -1;
    size_t cap = k->capchans;
    if (sr__grow((void **)&k->chans, &cap, (size_t)k->nchans + 1, sizeof *k->chans) != 0) return -2;
    k->capchans = (uint32_t)cap;
    chan *c = sr__calloc(1, sizeof *c);
    if (!c) return -2;
    c->sock = k, c->id = id, c->heap_idx = -1;
    k->chans[k->nchans++] = c;
    *out = c;
    return 0;
}

/* CLOSE: ends channel id of k and drops its pending wait, as closing a connection does (no key's
   waiters nor the heap name it any more).  A channel that is not open is left as it is: a CLOSE
   as a channel's first request opens and ends it at once. */
static void close_channel(sr__store_server *s, sock *k, uint32_t id) {
    uint32_t at = 0;
    chan *c = find_channel(k, id, &at);
    if (!c) return;
    clear_wait(s, c);
    k->chans[at] = k->chans[--k->nchans];
    free(c);
}

/* ---- requests ---- */

static int valid_key(const unsigned char *k, uint32_t len) {
    return len > 0 && len <= SR__STORE_MAX_KEY && !memchr(k, 0, len);
}

/* Serves one request on channel c (open, no wait pending); returns -1 when the connection must be
   closed, -2 when it must be closed because memory ran out (the caller tells the peer). */
static int serve_on(sr__store_server *s, chan *c, const sr__store_msg *m) {
    sock *k = c->sock;
    switch (m->op_or_status) {
    case SR__OP_SET:
        if (m->nitems != 2 || !valid_key(m->item[0], m->len[0])) return -1;
        if (put(s, (const char *)m->item[0], m->len[0], m->item[1], m->len[1]) != 0) return -2;
        reply(s, k, c->id, SR__ST_OK, 0, NULL, NULL);
        return 0;
    case SR__OP_GET: {
        if (m->nitems != 1 || !valid_key(m->item[0], m->len[0])) return -1;
        const entry *e = lookup_present(s, (const char *)m->item[0], m->len[0]);
        if (!e) {
            reply(s, k, c->id, SR__ST_NOTFOUND, 0, NULL, NULL);
            return 0;
        }
        const void *items[1] = {e->value};
        uint32_t lens[1] = {(uint32_t)e->len};
        reply(s, k, c->id, SR__ST_OK, 1, items, lens);
        return 0;
    }
    case SR__OP_ADD: {
        if (m->nitems != 2 || !valid_key(m->item[0], m->len[0]) || m->len[1] != 8) return -1;
        const entry *e = lookup_present(s, (const char *)m->item[0], m->len[0]);
        long long v = (e ? strtoll(e->value, NULL, 10) : 0) + sr__get_i64(m->item[1]);
        char text[32];
        int n = snprintf(text, sizeof text, "%lld", v);
        if (put(s, (const char *)m->item[0], m->len[0], text, (size_t)n) != 0) return -2;
        unsigned char out[8];
        sr__put_i64(out, v);
        const void *items[1] = {out};
        uint32_t lens[1] = {8};
        reply(s, k, c->id, SR__ST_OK, 1, items, lens);
        return 0;
    }
    case SR__OP_WAIT:
    case SR__OP_FETCH: {
        uint32_t first = m->op_or_status == SR__OP_WAIT ? 1 : 2;
        if (m->nitems <= first || m->len[0] != 8 || (first == 2 && m->len[1] != 8)) return -1;
        for (uint32_t i = first; i < m->nitems; i++)
            if (!valid_key(m->item[i], m->len[i])) return -1;
        c->piece = c->pieces = 0;
        if (first == 2) {
            c->piece = sr__get_u32(m->item[1]), c->pieces = sr__get_u32(m->item[1] + 4);
            if (c->pieces && c->piece >= c->pieces) return -1;
        }
        if (start_wait(s, c, m->op_or_status, sr__get_i64(m->item[0]), m, first) != 0) return -2;
        return 0;
    }
    case SR__OP_CHECK: {
        if (m->nitems == 0) return -1;
        for (uint32_t i = 0; i < m->nitems; i++)
            if (!valid_key(m->item[i], m->len[i])) return -1;
        int all = 1;
        for (uint32_t i = 0; i < m->nitems && all; i++)
            all = lookup_present(s, (const char *)m->item[i], m->len[i]) != NULL;
        reply(s, k, c->id, all ? SR__ST_OK : SR__ST_NOTFOUND, 0, NULL, NULL);
        return 0;
    }
    }
    return -1; /* unknown op (HELLO again among them) */
}

/* Serves one request of connection k: the handshake, a channel's CLOSE, or a request on the
   channel it names (opened by it when it is the channel's first).  -1 when the connection must be
   closed, -2 when it must be closed because memory ran out (the caller tells the peer). */
static int serve(sr__store_server *s, sock *k, const sr__store_msg *m) {
    if (!k->authed) {
        if (m->channel != 0) {
            reply_error(s, k, m->channel, "a connection's first request must be HELLO on channel 0");
            return -1;
        }
        if (m->op_or_status != SR__OP_HELLO || m->nitems != 1 || m->len[0] != strlen(s->token) ||
            memcmp(m->item[0], s->token, m->len[0]) != 0) {
            reply_error(s, k, 0, "wrong or missing token");
            return -1;
        }
        k->authed = 1;
        reply(s, k, 0, SR__ST_OK, 0, NULL, NULL);
        return 0;
    }
    if (m->op_or_status == SR__OP_CLOSE) {
        if (m->channel == 0 || m->nitems != 0) return -1; /* channel 0 lasts as long as the connection */
        close_channel(s, k, m->channel);
        return 0; /* no reply */
    }
    chan *c = find_channel(k, m->channel, NULL);
    if (!c) {
        int rc = open_channel(k, m->channel, &c);
        if (rc == -1) {
            char why[96];
            snprintf(why, sizeof why, "more than %u channels open on one connection", SR__STORE_MAX_CHANNELS);
            reply_error(s, k, m->channel, why);
        }
        if (rc != 0) return rc;
    }
    if (c->wait_on) return -1; /* one request at a time per channel: its wait is still pending */
    return serve_on(s, c, m);
}

/* ---- connections ---- */

/* Closes c now (every channel's wait ends: "waiting" no longer sees them); frees it, and its
   channels, at the end of the turn. */
static void close_conn(sr__store_server *s, sock *c) {
    if (c->dead) return;
    c->dead = 1;
    clear_wait(s, &c->ch0);
    for (uint32_t i = 0; i < c->nchans; i++) clear_wait(s, c->chans[i]);
    /* out of the epoll set first: close() alone leaves it there while a forked worker (a restart
       forks new ones while connections are open) still holds a copy of the descriptor, and epoll
       would go on reporting a connection this server has freed */
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    if (c->prev) c->prev->next = c->next;
    else s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    s->nconns--;
    c->next = s->graveyard;
    s->graveyard = c;
}

static void free_graveyard(sr__store_server *s) {
    while (s->graveyard) {
        sock *c = s->graveyard;
        s->graveyard = c->next;
        for (uint32_t i = 0; i < c->nchans; i++) free(c->chans[i]);
        free(c->chans);
        sr__buf_free(&c->in);
        sr__buf_free(&c->out);
        free(c);
    }
}

static void watch_out(sr__store_server *s, sock *c, int on) {
    if (c->want_out == on) return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0) c->want_out = on;
}

static void accept_all(sr__store_server *s) {
    while (1) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        sock *c = s->nconns < MAX_CONNS ? sr__calloc(1, sizeof *c) : NULL;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (!c || epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            if (!c && s->nconns < MAX_CONNS) tell_oom(s, fd); /* counted there, not as a rejection */
            else s->rejected++;
            free(c);
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->fd = fd;
        c->ch0.sock = c;
        c->ch0.heap_idx = -1;
        c->next = s->conns;
        if (s->conns) s->conns->prev = c;
        s->conns = c;
        s->nconns++;
    }
}

/* Reads and serves, at most SR__STORE_READS reads (a client that keeps writing does not hold the
   turn; level-triggered epoll reports the rest next turn); returns -1 when the connection is done
   (EOF, error, protocol violation). */
static int pump_in(sr__store_server *s, sock *c) {
    char buf[65536];
    for (int reads = 0; reads < SR__STORE_READS; reads++) {
        ssize_t n = read(c->fd, buf, sizeof buf);
        if (n == 0) return -1;
        if (n < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
        sr__buf_add(&c->in, buf, (size_t)n);
        if (c->in.oom) return tell_oom(s, c->fd), -1;
        while (c->in_off < c->in.n) {
            long used = sr__store_parse((const unsigned char *)c->in.s + c->in_off, c->in.n - c->in_off, &s->msg);
            if (used == -2) return tell_oom(s, c->fd), -1;
            if (used < 0) {
                s->rejected++;
                return -1;
            }
            if (used == 0) {
                if (c->in.n - c->in_off > SR__STORE_MAX_MESSAGE) {
                    s->rejected++;
                    return -1;
                }
                break;
            }
            int rc = serve(s, c, &s->msg);
            if (rc == -2) return tell_oom(s, c->fd), -1; /* what was queued for c is dropped */
            if (rc != 0) {
                s->rejected++;
                /* flush an error reply, best effort, before closing */
                if (c->out.n && write(c->fd, c->out.s, c->out.n) < 0) { /* the peer is gone anyway */
                }
                return -1;
            }
            c->in_off += (size_t)used;
        }
        /* drop what was served (once per read, not once per message) */
        memmove(c->in.s, c->in.s + c->in_off, c->in.n - c->in_off);
        c->in.n -= c->in_off;
        c->in_off = 0;
    }
    return 0;
}

static int pump_out(sock *c) {
    size_t off = 0;
    while (off < c->out.n) {
        ssize_t n = write(c->fd, c->out.s + off, c->out.n - off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            if (errno != EAGAIN) return -1;
            break;
        }
        off += (size_t)n;
    }
    memmove(c->out.s, c->out.s + off, c->out.n - off);
    c->out.n -= off;
    return 0;
}

/* Sends the replies queued this turn; what the socket does not take waits for POLLOUT. */
static void flush(sr__store_server *s) {
    for (size_t i = 0; i < s->ndirty; i++) {
        sock *c = s->dirty[i];
        c->dirty = 0;
        if (c->dead) continue;
        if (c->out.oom) tell_oom(s, c->fd);
        if (c->out.oom || pump_out(c) != 0) {
            close_conn(s, c); /* a reply it would never see whole */
            continue;
        }
        watch_out(s, c, c->out.n > 0);
    }
    s->ndirty = 0;
    /* a reply that could not be put on the list: its connection is closed with the reason */
    for (sock *c = s->oom_pending ? s->conns : NULL, *next; c; c = next) {
        next = c->next;
        if (c->out.oom) tell_oom(s, c->fd), close_conn(s, c);
    }
    s->oom_pending = 0;
}

sr__store_server *sr__store_server_start(const char *bind_addr, int port, const char *token, char *err, size_t errlen) {
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
    /* a deep backlog: thousands of agents and ranks connect at once (the kernel caps it) */
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4096) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", bind_addr ? bind_addr : "0.0.0.0", port, strerror(errno));
        close(fd);
        return NULL;
    }
    sr__store_server *s = sr__calloc(1, sizeof *s);
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL}; /* NULL: the listening socket */
    if (!s || !(s->token = sr__strdup(token)) || epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        snprintf(err, errlen, "cannot start the store server: %s",
                 !s || (s && !s->token) ? "out of memory" : strerror(errno));
        if (epfd >= 0) close(epfd);
        close(fd);
        if (s) free(s->token);
        free(s);
        return NULL;
    }
    s->listen_fd = fd;
    s->epfd = epfd;
    s->port = ntohs(a.sin_port);
    return s;
}

int sr__store_server_port(const sr__store_server *s) { return s->port; }

/* One descriptor: the epoll set, readable when any connection (or the listening socket) is. */
int sr__store_server_pollfds(sr__store_server *s, struct pollfd *pfds, int max) {
    if (max < 1) return 0;
    pfds[0] = (struct pollfd){.fd = s->epfd, .events = POLLIN};
    return 1;
}

void sr__store_server_handle(sr__store_server *s, const struct pollfd *pfds, int n) {
    (void)pfds, (void)n; /* epoll says which connections are ready; asking it costs one call */
    struct epoll_event ev[SR__STORE_BATCH];
    int k = SR__STORE_BATCH;
    for (int batch = 0; batch < SR__STORE_BATCHES && k == SR__STORE_BATCH; batch++) {
        if ((k = epoll_wait(s->epfd, ev, SR__STORE_BATCH, 0)) <= 0) break;
        for (int i = 0; i < k; i++) {
            sock *c = ev[i].data.ptr;
            if (!c) {
                accept_all(s);
                continue;
            }
            if (c->dead) continue;
            int done = 0;
            if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) done = pump_in(s, c) != 0;
            if (!done && (ev[i].events & EPOLLOUT)) {
                done = pump_out(c) != 0;
                if (!done) watch_out(s, c, c->out.n > 0);
            }
            if (done) close_conn(s, c);
        }
        flush(s);
        free_graveyard(s);
    }
    /* waits whose deadline passed */
    long long t = now_ms();
    while (s->nheap && s->heap[0]->deadline <= t) answer_wait(s, s->heap[0]);
    flush(s);
    free_graveyard(s);
}

int sr__store_server_timeout_ms(const sr__store_server *s) {
    if (!s->nheap) return -1;
    long long d = s->heap[0]->deadline - now_ms();
    return d < 0 ? 0 : d > 1 << 30 ? 1 << 30 : (int)d;
}

int sr__store_server_waiting(const sr__store_server *s, const char *key) {
    const entry *e = lookup(s, key, strlen(key));
    return e && !e->present && e->nwaiters > 0;
}

const char *sr__store_server_get(const sr__store_server *s, const char *key, size_t *len) {
    const entry *e = lookup_present(s, key, strlen(key));
    if (e && len) *len = e->len;
    return e ? e->value : NULL;
}

int sr__store_server_set_checked(sr__store_server *s, const char *key, const void *value, size_t len) {
    int rc = put(s, key, strlen(key), value, len);
    flush(s);
    free_graveyard(s);
    return rc;
}

void sr__store_server_set(sr__store_server *s, const char *key, const void *value, size_t len) {
    (void)sr__store_server_set_checked(s, key, value, len);
}

void sr__store_server_on_key(sr__store_server *s, sr__store_server_hook hook, void *ctx) {
    s->hook = hook;
    s->hook_ctx = ctx;
}

unsigned long sr__store_server_rejected(const sr__store_server *s) { return s->rejected; }

unsigned long sr__store_server_oom(const sr__store_server *s) { return s->oom; }

void sr__store_server_free(sr__store_server *s) {
    if (!s) return;
    while (s->conns) close_conn(s, s->conns);
    free_graveyard(s);
    for (size_t i = 0; i < s->nbuckets; i++)
        for (entry *e = s->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e->key), free(e->value), free(e->waiters), free(e);
        }
    free(s->buckets);
    free(s->heap);
    free(s->dirty);
    free(s->token);
    sr__store_msg_free(&s->msg);
    close(s->epfd);
    close(s->listen_fd);
    free(s);
}
