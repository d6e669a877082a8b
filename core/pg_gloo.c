/* The gloo backend: ring reduce-scatter, all-gather and all-reduce on CPU buffers over Gloo's
   TCP pairs (gloo_shim.cc), broadcast and barrier from Gloo itself.
   Ring indexing: at step s of n-1, rank r sends chunk (r-s-1) mod n and receives chunk
   (r-s-2) mod n, so after the last step it holds chunk r fully reduced; the all-gather half then
   sends chunk (r-s) and receives (r-s-1).  Each step is cut into segments and each received
   segment is reduced while the next ones are still on the wire. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gloo_shim.h"
#include "pg_backend.h"
#include "reduce.h"

#define SEGMENT (1u << 20)

typedef struct gloo_pg {
    sr_gloo *g;
    int rank, size;
    /* receive buffers of the ring steps, kept (and registered with Gloo) between operations:
       fresh pages for every call cost a page fault per 4 KiB, a third of a 64 MiB all-reduce */
    unsigned char *scratch[2];
    size_t scratch_len[2];
    sr_gloo_buf *scratch_buf[2];
} gloo_pg;

static sr_gloo_buf *scratch(gloo_pg *p, int i, size_t len, unsigned char **mem, char *err, size_t errlen) {
    if (p->scratch_len[i] < len || !p->scratch_buf[i]) {
        sr__gloo_buf_free(p->scratch_buf[i]);
        free(p->scratch[i]);
        p->scratch[i] = malloc(len ? len : 1);
        p->scratch_len[i] = len;
        p->scratch_buf[i] = sr__gloo_buf_new(p->g, p->scratch[i], len ? len : 1, err, errlen);
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
static int step(gloo_pg *p, sr_gloo_buf *sb, size_t soff, size_t slen, sr_gloo_buf *rb, size_t roff, size_t rlen,
                reduce_arg *ra, int *stuck, char *err, size_t errlen) {
    int rc = sr__gloo_ring_step(p->g, mod(p->rank + 1, p->size), sb, soff, slen, mod(p->rank - 1, p->size), rb, roff,
                                rlen, SEGMENT, ra ? reduce_segment : NULL, ra, stuck, err, errlen);
    return rc == 0 ? 0 : *stuck >= 0 ? SR_PG_TIMEOUT : -1;
}

/* In-place ring all-gather of a registered buffer whose chunk i is `count` elements (even) or
   chunk_start/chunk_len of `count` (uneven). */
static int ring_all_gather(gloo_pg *p, sr_gloo_buf *b, size_t count, size_t es, int even, int *stuck, char *err,
                           size_t errlen) {
    int n = p->size;
    for (int s = 0; s < n - 1; s++) {
        int out = mod(p->rank - s, n), in = mod(p->rank - s - 1, n);
        size_t os = even ? (size_t)out * count : chunk_start(count, n, out), ol = even ? count : chunk_len(count, n, out);
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
    sr_gloo_buf *b = sr__gloo_buf_new(p->g, recv, count * es * (size_t)p->size, err, errlen);
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
    /* the input stays untouched: partial sums travel through two chunk-sized scratch buffers;
       Gloo only reads from the input, so registering it without const is safe */
    unsigned char *tmp[2];
    sr_gloo_buf *tb[2] = {scratch(p, 0, cb, &tmp[0], err, errlen), scratch(p, 1, cb, &tmp[1], err, errlen)};
    sr_gloo_buf *ib = sr__gloo_buf_new(p->g, (void *)send, cb * (size_t)n, err, errlen);
    sr_gloo_buf *ob = sr__gloo_buf_new(p->g, recv, cb, err, errlen);
    int rc = tb[0] && tb[1] && ib && ob ? 0 : -1;
    sr_gloo_buf *out = ib;
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
    if (rc == 0 && op == SR_AVG) sr__divide(recv, count, dt, n);
    return rc;
}

static int gloo_all_reduce(void *impl, void *buf, size_t count, sr_dtype dt, sr_redop op, int *stuck, char *err,
                           size_t errlen) {
    gloo_pg *p = impl;
    int n = p->size;
    size_t es = sr_dtype_size(dt);
    unsigned char *b = buf, *tmp;
    if (n == 1) return 0;
    sr_gloo_buf *tb = scratch(p, 0, chunk_len(count, n, 0) * es, &tmp, err, errlen);
    sr_gloo_buf *bb = sr__gloo_buf_new(p->g, buf, count * es, err, errlen);
    int rc = tb && bb ? 0 : -1;
    for (int s = 0; s < n - 1 && rc == 0; s++) {
        int out = mod(p->rank - s - 1, n), in = mod(p->rank - s - 2, n);
        reduce_arg ra = {b + chunk_start(count, n, in) * es, tmp, dt, op}; /* chunk += received */
        rc = step(p, bb, chunk_start(count, n, out) * es, chunk_len(count, n, out) * es, tb, 0,
                  chunk_len(count, n, in) * es, &ra, stuck, err, errlen);
    }
    if (rc == 0 && op == SR_AVG) sr__divide(b + chunk_start(count, n, p->rank) * es, chunk_len(count, n, p->rank), dt, n);
    if (rc == 0) rc = ring_all_gather(p, bb, count, es, 0, stuck, err, errlen);
    sr__gloo_buf_free(bb);
    return rc;
}

static int gloo_broadcast(void *impl, void *buf, size_t count, sr_dtype dt, int root, int *stuck, char *err,
                          size_t errlen) {
    gloo_pg *p = impl;
    *stuck = -1;
    if (p->size == 1) return 0;
    return sr__gloo_broadcast(p->g, buf, count * sr_dtype_size(dt), root, err, errlen) ? -1 : 0;
}

static int gloo_barrier(void *impl, int *stuck, char *err, size_t errlen) {
    gloo_pg *p = impl;
    *stuck = -1;
    if (p->size == 1) return 0;
    return sr__gloo_barrier(p->g, err, errlen) ? -1 : 0;
}

static void *gloo_create(void *parent, const sr_pg_setup *s, char *err, size_t errlen) {
    (void)parent; /* every Gloo group meets afresh through the store */
    gloo_pg *p = calloc(1, sizeof *p);
    p->rank = s->rank;
    p->size = s->size;
    if (s->size > 1) {
        p->g = sr__gloo_create(s->store, s->store_lock, s->prefix, s->rank, s->size, s->hostname, s->iface,
                               s->timeout_s, err, errlen);
        if (!p->g) {
            free(p);
            return NULL;
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
    free(p);
}

const sr_pg_backend_ops sr__gloo_backend = {
    "gloo",         gloo_all_gather, gloo_reduce_scatter, gloo_all_reduce, gloo_broadcast, gloo_barrier,
    gloo_create,    gloo_destroy,
};
