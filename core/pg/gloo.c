/* The gloo backend: ring reduce-scatter, all-gather and all-reduce on CPU buffers over Gloo's
   TCP pairs (gloo_shim.cc), broadcast over a tree and a dissemination barrier (gloo_shim.cc).
   Ring indexing: at step s of n-1, rank r sends chunk (r-s-1) mod n and receives chunk
   (r-s-2) mod n, so after the last step it holds chunk r fully reduced; the all-gather half then
   sends chunk (r-s) and receives (r-s-1).  Each step is cut into segments and each received
   segment is reduced while the next ones are still on the wire.
   Small and mid-size operations take the direct path instead (sr__gloo_exchange): every rank
   sends its part to every peer at once and waits once per round of at most DIRECT_CAP bytes per
   message, instead of n-1 ring steps that each chain several thread wake-ups through Gloo's
   event loop (a scheduler slice apiece when ranks outnumber cores); reductions then run locally
   in rank order, so every rank gets the same bits. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "pg/backend.h"
#include "pg/fault.h"
#include "pg/gloo_peers.h"
#include "pg/gloo_shim.h"
#include "pg/reduce.h"

#define SEGMENT (1u << 20)
/* The direct path's largest message (one round's piece of a chunk, or a whole tiny all-reduce
   buffer).  Up to two messages of one peer may wait unread in a socket (its next round's, while
   this rank still reads the current one); they must fit the receive window, or the sender's tail
   waits for a window update and the operation stalls for TCP timers (measured: 64 KiB messages
   after a history of small ones stall ~100 ms on loopback; 32 KiB ones do not, 16 KiB leaves
   margin). */
#define DIRECT_CAP (16u << 10)
/* Larger chunks go in rounds of DIRECT_CAP-sized pieces (a peer may run one round ahead: still at
   most two unread messages per socket), up to this many rounds, i.e. 128 KiB per peer; a round
   costs one wake-up, a ring step through Gloo's event loop several, but past this the ring's
   overlapped segments win and large transfers keep the ring's bandwidth (measured at 2 and 4
   ranks on 2 cores: 8 rounds still beat the ring clearly, 16 about break even at 4 ranks). */
#define DIRECT_ROUNDS 8

typedef struct gloo_pg {
    sr__gloo *g;
    int rank, size;
    /* receive buffers of the ring steps, kept (and registered with Gloo) between operations:
       fresh pages for every call cost a page fault per 4 KiB, a third of a 64 MiB all-reduce */
    unsigned char *scratch[2];
    size_t scratch_len[2];
    sr__gloo_buf *scratch_buf[2];
    /* direct path: per-peer arguments of sr__gloo_exchange, and a copy of this rank's own
       contribution when the output overwrites it */
    const void **dsend;
    size_t *dlen;
    const unsigned char **drecv;
    size_t *dstart, *dsize; /* where each rank's chunk lies, and its bytes */
    unsigned char *own;
} gloo_pg;

/* what an average divides by: the group size (SHARDRUN_DEBUG_PG_FAULT=gloo_avg_divisor: one more) */
static int avg_divisor(int n) { return sr__pg_fault() == SR__PG_FAULT_GLOO_AVG_DIVISOR ? n + 1 : n; }

static sr__gloo_buf *scratch(gloo_pg *p, int i, size_t len, unsigned char **mem, char *err, size_t errlen) {
    if (p->scratch_len[i] < len || !p->scratch_buf[i]) {
        sr__gloo_buf_free(p->scratch_buf[i]);
        free(p->scratch[i]);
        p->scratch[i] = sr__malloc(len ? len : 1);
        p->scratch_len[i] = p->scratch[i] ? len : 0;
        p->scratch_buf[i] = NULL;
        if (!p->scratch[i]) snprintf(err, errlen, "gloo: out of memory for a %zu-byte scratch buffer", len);
        else p->scratch_buf[i] = sr__gloo_buf_new(p->g, p->scratch[i], len ? len : 1, err, errlen);
    }
    *mem = p->scratch[i];
    return p->scratch_buf[i];
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

/* chunk i of a buffer of `count` elements cut into n nearly equal parts */
static size_t chunk_start(size_t count, int n, int i) {
    size_t q = count / (size_t)n, r = count % (size_t)n, k = (size_t)i;
    return q * k + (k < r ? k : r);
}
static size_t chunk_len(size_t count, int n, int i) { return count / (size_t)n + ((size_t)i < count % (size_t)n); }

/* Can this operation take the direct path with `bytes` per peer, in at most `rounds` rounds?
   (The same answer on every rank: it depends only on the group, count and dtype.) */
static int direct_fits(gloo_pg *p, size_t bytes, size_t rounds) {
    return p->dsend && bytes <= rounds * sr__gloo_direct_cap(p->g);
}

/* Bytes of round `off` (a multiple of the cap) of a `total`-byte message: what is left, at most
   the cap; 0 once the message is done (it still goes, empty, to keep rounds in step). */
static size_t round_len(gloo_pg *p, size_t total, size_t off) {
    size_t cap = sr__gloo_direct_cap(p->g);
    return off >= total ? 0 : total - off < cap ? total - off : cap;
}

/* base + off for a piece of `len` bytes; base itself for an empty one, whose offset may lie past
   the end of the buffer */
static const unsigned char *piece(const unsigned char *base, size_t off, size_t len) { return len ? base + off : base; }

/* One direct round over p->dsend/dlen; p->drecv[q] then points to peer q's message. */
static int exchange(gloo_pg *p, int *stuck, char *err, size_t errlen) {
    int rc = sr__gloo_exchange(p->g, p->dsend, p->dlen, p->drecv, stuck, err, errlen);
    return rc == 0 ? 0 : *stuck >= 0 ? SR__PG_TIMEOUT : -1;
}

/* dst = op over ranks 0..n-1 of p->drecv[rank] (this rank's entry is `own`), folded in rank
   order: the same operations in the same order, hence the same bits, on every rank and every
   run.  `own` may be dst itself; it is copied aside first unless it comes first anyway. */
static void reduce_rank_order(gloo_pg *p, unsigned char *dst, const unsigned char *own, size_t count, sr_dtype dt,
                              sr_redop op) {
    size_t bytes = count * sr_dtype_size(dt);
    if (p->rank != 0 && own + bytes > dst && dst + bytes > own) {
        memcpy(p->own, own, bytes);
        own = p->own;
    }
    p->drecv[p->rank] = own;
    if (dst != p->drecv[0]) memcpy(dst, p->drecv[0], bytes);
    for (int r = 1; r < p->size; r++) sr__reduce(dst, p->drecv[r], count, dt, op);
    if (op == SR_AVG) sr__divide(dst, count, dt, avg_divisor(p->size));
}

/* Direct all-gather of chunks of lens[q] bytes at out + starts[q] (mine among them), in rounds
   of at most the cap: my chunk to everyone, everyone's chunk into place. */
static int direct_gather_chunks(gloo_pg *p, unsigned char *out, const size_t *starts, const size_t *lens, int *stuck,
                                char *err, size_t errlen) {
    size_t cap = sr__gloo_direct_cap(p->g), mine = lens[p->rank], most = 0;
    for (int q = 0; q < p->size; q++) most = lens[q] > most ? lens[q] : most;
    int rc = 0;
    for (size_t off = 0; off < most && rc == 0; off += cap) {
        size_t len = round_len(p, mine, off);
        for (int q = 0; q < p->size; q++) p->dsend[q] = piece(out + starts[p->rank], off, len), p->dlen[q] = len;
        rc = exchange(p, stuck, err, errlen);
        for (int q = 0; q < p->size && rc == 0; q++)
            if (q != p->rank) memcpy(out + starts[q] + off, p->drecv[q], round_len(p, lens[q], off));
    }
    return rc;
}

/* Direct reduce-scatter in rounds of at most the cap: chunk q (lens[q] bytes at in + starts[q])
   goes to rank q, and the pieces for me fold in rank order into out (mine: lens[rank] bytes).
   Element-wise, so folding round by round gives the bits of folding all at once. */
static int direct_scatter_chunks(gloo_pg *p, const unsigned char *in, const size_t *starts, const size_t *lens,
                                 unsigned char *out, sr_dtype dt, sr_redop op, int *stuck, char *err, size_t errlen) {
    size_t cap = sr__gloo_direct_cap(p->g), es = sr_dtype_size(dt), most = 0;
    for (int q = 0; q < p->size; q++) most = lens[q] > most ? lens[q] : most;
    int rc = 0;
    for (size_t off = 0; off < most && rc == 0; off += cap) {
        for (int q = 0; q < p->size; q++)
            p->dlen[q] = round_len(p, lens[q], off), p->dsend[q] = piece(in + starts[q], off, p->dlen[q]);
        rc = exchange(p, stuck, err, errlen);
        size_t len = round_len(p, lens[p->rank], off);
        if (rc == 0 && len) reduce_rank_order(p, out + off, in + starts[p->rank] + off, len / es, dt, op);
    }
    return rc;
}

typedef struct reduce_arg {
    unsigned char *dst;       /* reduced in place, per segment */
    const unsigned char *src; /* the other operand */
    sr_dtype dt;
    sr_redop op;
} reduce_arg;

static void reduce_segment(void *a, size_t off, size_t len) {
    reduce_arg *r = a;
    size_t es = sr_dtype_size(r->dt);
    sr__reduce(r->dst + off, r->src + off, len / es, r->dt, r->op);
}

/* One ring step (byte offsets into registered buffers). */
static int step(gloo_pg *p, sr__gloo_buf *sb, size_t soff, size_t slen, sr__gloo_buf *rb, size_t roff, size_t rlen,
                reduce_arg *ra, int *stuck, char *err, size_t errlen) {
    int right, left;
    sr__gloo_ring_peers(p->rank, p->size, &right, &left);
    int rc = sr__gloo_ring_step(p->g, right, sb, soff, slen, left, rb, roff, rlen, SEGMENT, ra ? reduce_segment : NULL,
                                ra, stuck, err, errlen);
    return rc == 0 ? 0 : *stuck >= 0 ? SR__PG_TIMEOUT : -1;
}

/* In-place ring all-gather of a registered buffer whose chunk i is `count` elements (even) or
   chunk_start/chunk_len of `count` (uneven). */
static int ring_all_gather(gloo_pg *p, sr__gloo_buf *b, size_t count, size_t es, int even, int *stuck, char *err,
                           size_t errlen) {
    int n = p->size;
    for (int s = 0; s < n - 1; s++) {
        int out = mod(p->rank - s, n), in = mod(p->rank - s - 1, n);
        size_t os = even ? (size_t)out * count : chunk_start(count, n, out),
               ol = even ? count : chunk_len(count, n, out);
        size_t is = even ? (size_t)in * count : chunk_start(count, n, in), il = even ? count : chunk_len(count, n, in);
        int rc = step(p, b, os * es, ol * es, b, is * es, il * es, NULL, stuck, err, errlen);
        if (rc) return rc;
    }
    return 0;
}

static int gloo_all_gather(void *impl, const void *send, void *recv, size_t count, sr_dtype dt, int *stuck, char *err,
                           size_t errlen) {
    gloo_pg *p = impl;
    size_t es = sr_dtype_size(dt);
    unsigned char *own = (unsigned char *)recv + (size_t)p->rank * count * es;
    if (own != send) memmove(own, send, count * es);
    if (p->size == 1) return 0;
    if (direct_fits(p, count * es, DIRECT_ROUNDS)) {
        for (int q = 0; q < p->size; q++) p->dstart[q] = (size_t)q * count * es, p->dsize[q] = count * es;
        return direct_gather_chunks(p, recv, p->dstart, p->dsize, stuck, err, errlen);
    }
    sr__gloo_buf *b = sr__gloo_buf_new(p->g, recv, count * es * (size_t)p->size, err, errlen);
    if (!b) return -1;
    int rc = ring_all_gather(p, b, count, es, 1, stuck, err, errlen);
    sr__gloo_buf_free(b);
    return rc;
}

static int gloo_reduce_scatter(void *impl, const void *send, void *recv, size_t count, sr_dtype dt, sr_redop op,
                               int *stuck, char *err, size_t errlen) {
    gloo_pg *p = impl;
    int n = p->size;
    size_t cb = count * sr_dtype_size(dt);
    const unsigned char *in = send;
    if (n == 1) {
        if (recv != send) memmove(recv, send, cb);
        return 0;
    }
    if (direct_fits(p, cb, DIRECT_ROUNDS)) {
        for (int q = 0; q < n; q++) p->dstart[q] = (size_t)q * cb, p->dsize[q] = cb;
        return direct_scatter_chunks(p, in, p->dstart, p->dsize, recv, dt, op, stuck, err, errlen);
    }
    /* the input stays untouched: partial sums travel through two chunk-sized scratch buffers;
       Gloo only reads from the input, so registering it without const is safe */
    unsigned char *tmp[2];
    sr__gloo_buf *tb[2] = {scratch(p, 0, cb, &tmp[0], err, errlen), scratch(p, 1, cb, &tmp[1], err, errlen)};
    sr__gloo_buf *ib = sr__gloo_buf_new(p->g, (void *)send, cb * (size_t)n, err, errlen);
    sr__gloo_buf *ob = sr__gloo_buf_new(p->g, recv, cb, err, errlen);
    int rc = tb[0] && tb[1] && ib && ob ? 0 : -1;
    sr__gloo_buf *out = ib;
    size_t out_off = (size_t)mod(p->rank - 1, n) * cb;
    for (int s = 0; s < n - 1 && rc == 0; s++) {
        int c = mod(p->rank - s - 2, n), last = s == n - 2;
        unsigned char *into = last ? recv : tmp[s & 1];
        reduce_arg ra = {into, in + (size_t)c * cb, dt, op};
        rc = step(p, out, out_off, cb, last ? ob : tb[s & 1], 0, cb, &ra, stuck, err, errlen);
        out = tb[s & 1];
        out_off = 0;
    }
    sr__gloo_buf_free(ib);
    sr__gloo_buf_free(ob);
    if (rc == 0 && op == SR_AVG) sr__divide(recv, count, dt, avg_divisor(n));
    return rc;
}

/* tiny all-reduce in one round: everyone sends the whole buffer to everyone and folds all n of
   them in rank order (n-1 reductions of the whole buffer, cheap at these sizes) */
static int direct_all_reduce_whole(gloo_pg *p, unsigned char *b, size_t count, sr_dtype dt, sr_redop op, int *stuck,
                                   char *err, size_t errlen) {
    for (int q = 0; q < p->size; q++) p->dsend[q] = b, p->dlen[q] = count * sr_dtype_size(dt);
    int rc = exchange(p, stuck, err, errlen);
    if (rc == 0) reduce_rank_order(p, b, b, count, dt, op);
    return rc;
}

/* mid-size all-reduce: a direct reduce-scatter of the ring's uneven chunks (chunk q to rank q,
   folded there in rank order, in place), then a direct all-gather of the reduced chunks */
static int direct_all_reduce_chunks(gloo_pg *p, unsigned char *b, size_t count, sr_dtype dt, sr_redop op, int *stuck,
                                    char *err, size_t errlen) {
    int n = p->size;
    size_t es = sr_dtype_size(dt);
    for (int q = 0; q < n; q++) p->dstart[q] = chunk_start(count, n, q) * es, p->dsize[q] = chunk_len(count, n, q) * es;
    int rc = direct_scatter_chunks(p, b, p->dstart, p->dsize, b + p->dstart[p->rank], dt, op, stuck, err, errlen);
    return rc ? rc : direct_gather_chunks(p, b, p->dstart, p->dsize, stuck, err, errlen);
}

static int gloo_all_reduce(void *impl, void *buf, size_t count, sr_dtype dt, sr_redop op, int *stuck, char *err,
                           size_t errlen) {
    gloo_pg *p = impl;
    int n = p->size;
    size_t es = sr_dtype_size(dt);
    unsigned char *b = buf, *tmp;
    if (n == 1) return 0;
    if (direct_fits(p, count * es, 1)) return direct_all_reduce_whole(p, b, count, dt, op, stuck, err, errlen);
    if (direct_fits(p, chunk_len(count, n, 0) * es, DIRECT_ROUNDS))
        return direct_all_reduce_chunks(p, b, count, dt, op, stuck, err, errlen);
    sr__gloo_buf *tb = scratch(p, 0, chunk_len(count, n, 0) * es, &tmp, err, errlen);
    sr__gloo_buf *bb = sr__gloo_buf_new(p->g, buf, count * es, err, errlen);
    int rc = tb && bb ? 0 : -1;
    for (int s = 0; s < n - 1 && rc == 0; s++) {
        int out = mod(p->rank - s - 1, n), in = mod(p->rank - s - 2, n);
        reduce_arg ra = {b + chunk_start(count, n, in) * es, tmp, dt, op}; /* chunk += received */
        rc = step(p, bb, chunk_start(count, n, out) * es, chunk_len(count, n, out) * es, tb, 0,
                  chunk_len(count, n, in) * es, &ra, stuck, err, errlen);
    }
    if (rc == 0 && op == SR_AVG)
        sr__divide(b + chunk_start(count, n, p->rank) * es, chunk_len(count, n, p->rank), dt, avg_divisor(n));
    if (rc == 0) rc = ring_all_gather(p, bb, count, es, 0, stuck, err, errlen);
    sr__gloo_buf_free(bb);
    return rc;
}

static int gloo_broadcast(void *impl, void *buf, size_t count, sr_dtype dt, int root, int *stuck, char *err,
                          size_t errlen) {
    gloo_pg *p = impl;
    *stuck = -1;
    if (p->size == 1) return 0;
    int rc = sr__gloo_broadcast(p->g, buf, count * sr_dtype_size(dt), root, stuck, err, errlen);
    return rc == 0 ? 0 : *stuck >= 0 ? SR__PG_TIMEOUT : -1;
}

static int gloo_barrier(void *impl, int *stuck, char *err, size_t errlen) {
    gloo_pg *p = impl;
    *stuck = -1;
    if (p->size == 1) return 0;
    int rc = sr__gloo_barrier(p->g, stuck, err, errlen);
    return rc == 0 ? 0 : *stuck >= 0 ? SR__PG_TIMEOUT : -1;
}

static void gloo_destroy(void *impl);

static void *gloo_create(void *parent, const sr__pg_setup *s, char *err, size_t errlen) {
    (void)parent; /* every Gloo group meets afresh through the store */
    gloo_pg *p = sr__calloc(1, sizeof *p);
    if (!p) return snprintf(err, errlen, "gloo: out of memory for a group of %d ranks", s->size), NULL;
    p->rank = s->rank;
    p->size = s->size;
    if (s->size > 1) {
        sr__gloo_plan plan = sr__gloo_plan_for(s->size);
        size_t direct = plan.direct ? DIRECT_CAP : 0;
        p->g = sr__gloo_create(s->store, s->store_lock, s->prefix, s->rank, s->size, s->hostname, s->iface,
                               s->timeout_s, direct, !plan.eager, err, errlen);
        if (!p->g) {
            free(p);
            return NULL;
        }
        if (direct) {
            p->dsend = sr__calloc((size_t)s->size, sizeof *p->dsend);
            p->dlen = sr__calloc((size_t)s->size, sizeof *p->dlen);
            p->drecv = sr__calloc((size_t)s->size, sizeof *p->drecv);
            p->dstart = sr__calloc((size_t)s->size, sizeof *p->dstart);
            p->dsize = sr__calloc((size_t)s->size, sizeof *p->dsize);
            p->own = sr__malloc(direct);
            if (!p->dsend || !p->dlen || !p->drecv || !p->dstart || !p->dsize || !p->own) {
                snprintf(err, errlen, "gloo: out of memory for the direct path of %d ranks (%zu bytes)", s->size,
                         direct);
                gloo_destroy(p);
                return NULL;
            }
        }
    }
    return p;
}

static void gloo_destroy(void *impl) {
    gloo_pg *p = impl;
    for (int i = 0; i < 2; i++) {
        sr__gloo_buf_free(p->scratch_buf[i]);
        free(p->scratch[i]);
    }
    if (p->g) sr__gloo_free(p->g);
    free(p->dsend);
    free(p->dlen);
    free(p->drecv);
    free(p->dstart);
    free(p->dsize);
    free(p->own);
    free(p);
}

const sr__pg_backend_ops sr__gloo_backend = {
    "gloo",         gloo_all_gather, gloo_reduce_scatter, gloo_all_reduce,
    gloo_broadcast, gloo_barrier,    gloo_create,         gloo_destroy,
};
