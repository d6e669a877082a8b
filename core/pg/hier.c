/* The hierarchical transport: a gloo group whose ranks span hosts, with several ranks on at least
   one host, runs each collective as shared memory inside every host (pg/shm.c) and Gloo between
   one leader per host (the host's first rank in group order; pg/gloo.c):
     all-reduce      local all-reduce, leaders' all-reduce, local broadcast from the leader (avg:
                     sums all the way, every rank divides the same bits by the group size at the end)
     broadcast       local broadcast on the root's host (root -> its leader), leaders' broadcast
                     from that leader, local broadcast from the leader on the other hosts
     all-gather      local all-gather, leaders' all-gather of the hosts' parts (padded to the
                     largest host), local broadcast, each rank puts every part in group order
     reduce-scatter  an all-reduce of a copy of the input, then this rank's chunk
     barrier         local, leaders, local
   Reductions fold in a fixed order (inside each host in rank order, then the hosts in leader
   order): every rank gets the same bits, on every run, though not Gloo's flat ring order. */
#define _GNU_SOURCE
#include "pg/hier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "pg/meet.h"
#include "pg/reduce.h"
#include "pg/shm.h"

typedef struct hier_pg {
    int rank, size, nhosts, host, maxl;
    int *host_of, *local_of; /* per group rank: its host (0..nhosts-1, in order of first rank) and index there */
    int **members;           /* per host: its group ranks, in order */
    int *count;              /* per host: how many */
    void *local, *leaders;   /* shm impl of my host; gloo impl of the leaders (NULL unless I lead) */
    unsigned char *tmp;
    size_t tmplen;
} hier_pg;

static const sr__pg_backend_ops *L = &sr__shm_backend, *X = &sr__gloo_backend;

static unsigned char *scratch(hier_pg *p, size_t len) {
    if (p->tmplen < len) {
        free(p->tmp);
        p->tmp = sr__malloc(len);
        p->tmplen = p->tmp ? len : 0;
    }
    return p->tmp;
}

/* a sub-operation's stuck rank in the group's numbering */
static int local_rc(hier_pg *p, int rc, int *stuck) {
    if (rc && *stuck >= 0) *stuck = p->members[p->host][*stuck];
    return rc;
}
static int leaders_rc(hier_pg *p, int rc, int *stuck) {
    if (rc && *stuck >= 0) *stuck = p->members[*stuck][0];
    return rc;
}
static int leads(hier_pg *p) { return p->leaders != NULL; }

static int hier_all_reduce(void *impl, void *buf, size_t count, sr_dtype dt, sr_redop op, int *stuck, char *err,
                           size_t errlen) {
    hier_pg *p = impl;
    sr_redop inner = op == SR_AVG ? SR_SUM : op;
    int rc = local_rc(p, L->all_reduce(p->local, buf, count, dt, inner, stuck, err, errlen), stuck);
    if (!rc && leads(p))
        rc = leaders_rc(p, X->all_reduce(p->leaders, buf, count, dt, inner, stuck, err, errlen), stuck);
    if (!rc) rc = local_rc(p, L->broadcast(p->local, buf, count, dt, 0, stuck, err, errlen), stuck);
    if (!rc && op == SR_AVG) sr__divide(buf, count, dt, p->size);
    return rc;
}

static int hier_broadcast(void *impl, void *buf, size_t count, sr_dtype dt, int root, int *stuck, char *err,
                          size_t errlen) {
    hier_pg *p = impl;
    int h = p->host_of[root], rc = 0;
    if (p->host == h)
        rc = local_rc(p, L->broadcast(p->local, buf, count, dt, p->local_of[root], stuck, err, errlen), stuck);
    if (!rc && leads(p)) rc = leaders_rc(p, X->broadcast(p->leaders, buf, count, dt, h, stuck, err, errlen), stuck);
    if (!rc && p->host != h) rc = local_rc(p, L->broadcast(p->local, buf, count, dt, 0, stuck, err, errlen), stuck);
    return rc;
}

static int hier_barrier(void *impl, int *stuck, char *err, size_t errlen) {
    hier_pg *p = impl;
    int rc = local_rc(p, L->barrier(p->local, stuck, err, errlen), stuck);
    if (!rc && leads(p)) rc = leaders_rc(p, X->barrier(p->leaders, stuck, err, errlen), stuck);
    if (!rc) rc = local_rc(p, L->barrier(p->local, stuck, err, errlen), stuck);
    return rc;
}

static int hier_all_gather(void *impl, const void *send, void *recv, size_t count, sr_dtype dt, int *stuck, char *err,
                           size_t errlen) {
    hier_pg *p = impl;
    size_t part = count * sr_dtype_size(dt), hostpart = part * (size_t)p->maxl;
    /* [host 0's parts, padded][host 1's]...: the local gather lands in my host's place */
    unsigned char *all = scratch(p, hostpart * (size_t)p->nhosts);
    if (!all) {
        snprintf(err, errlen, "hier: out of memory for %zu bytes", hostpart * (size_t)p->nhosts);
        return -1;
    }
    unsigned char *mine = all + hostpart * (size_t)p->host;
    int rc = local_rc(p, L->all_gather(p->local, send, mine, count, dt, stuck, err, errlen), stuck);
    if (!rc && leads(p))
        rc = leaders_rc(p, X->all_gather(p->leaders, mine, all, hostpart / sr_dtype_size(dt), dt, stuck, err, errlen),
                        stuck);
    if (!rc)
        rc = local_rc(
            p, L->broadcast(p->local, all, hostpart / sr_dtype_size(dt) * (size_t)p->nhosts, dt, 0, stuck, err, errlen),
            stuck);
    for (int g = 0; g < p->size && !rc; g++)
        memcpy((unsigned char *)recv + (size_t)g * part,
               all + hostpart * (size_t)p->host_of[g] + part * (size_t)p->local_of[g], part);
    return rc;
}

static int hier_reduce_scatter(void *impl, const void *send, void *recv, size_t count, sr_dtype dt, sr_redop op,
                               int *stuck, char *err, size_t errlen) {
    hier_pg *p = impl;
    size_t part = count * sr_dtype_size(dt);
    /* recv may be inside send: reduce a copy, not the caller's input */
    unsigned char *whole = sr__malloc(part * (size_t)p->size);
    if (!whole) {
        snprintf(err, errlen, "hier: out of memory for %zu bytes", part * (size_t)p->size);
        return -1;
    }
    memcpy(whole, send, part * (size_t)p->size);
    int rc = hier_all_reduce(impl, whole, count * (size_t)p->size, dt, op, stuck, err, errlen);
    if (!rc) memmove(recv, whole + part * (size_t)p->rank, part);
    free(whole);
    return rc;
}

static void hier_destroy(void *impl) {
    hier_pg *p = impl;
    if (p->local) L->destroy(p->local);
    if (p->leaders) X->destroy(p->leaders);
    for (int h = 0; p->members && h < p->nhosts; h++) free(p->members[h]);
    free(p->members);
    free(p->count);
    free(p->host_of);
    free(p->local_of);
    free(p->tmp);
    free(p);
}

/* Every rank of the group gives ok (1 or 0) at `stage` and learns everyone's (pg/meet.h: store
   traffic linear in the group's size): 0 when all are 1; -1 otherwise, with a message in err unless
   it holds one already. */
static int all_ok(const sr__pg_setup *s, const char *stage, int ok, char *err, size_t errlen) {
    long long *oks = sr__calloc((size_t)s->size, sizeof *oks);
    if (!oks) { /* this rank still says it failed, so that the others need not wait for it */
        sr__pg_meet_say(s, stage, 0);
        if (!err[0]) snprintf(err, errlen, "out of memory for the answers of %d ranks", s->size);
        return -1;
    }
    char why[1200];
    int who, rc = sr__pg_meet(s, stage, ok, oks, &who, why, sizeof why);
    if (rc == SR__MEET_LATE && !err[0])
        snprintf(err, errlen, "not every rank set up its part in time (missing: rank%s %.800s)",
                 strchr(why, ',') ? "s" : "", why);
    else if (rc == SR__MEET_OOM && !err[0]) snprintf(err, errlen, "out of memory on rank %d: %.800s", who, why);
    else if (rc && !err[0]) snprintf(err, errlen, "store error: %.800s", why);
    for (int r = 0; r < s->size && rc == 0; r++)
        if (oks[r] != 1) {
            if (!err[0]) snprintf(err, errlen, "shared memory inside the host of rank %d failed", r);
            rc = -1;
        }
    free(oks);
    return rc ? -1 : 0;
}

static void *hier_create(void *parent, const sr__pg_setup *s, char *err, size_t errlen) {
    (void)parent;
    hier_pg *p = sr__calloc(1, sizeof *p);
    if (!p) return snprintf(err, errlen, "hier: out of memory for a group of %d ranks", s->size), NULL;
    p->rank = s->rank;
    p->size = s->size;
    p->host_of = sr__calloc((size_t)s->size, sizeof *p->host_of);
    p->local_of = sr__calloc((size_t)s->size, sizeof *p->local_of);
    p->count = sr__calloc((size_t)s->size, sizeof *p->count);
    p->members = sr__calloc((size_t)s->size, sizeof *p->members);
    if (!p->host_of || !p->local_of || !p->count || !p->members) {
        snprintf(err, errlen, "hier: out of memory for the layout of %d ranks", s->size);
        hier_destroy(p);
        return NULL;
    }
    for (int g = 0; g < s->size; g++) {
        int h = 0;
        while (h < p->nhosts && s->hosts[p->members[h][0]] != s->hosts[g]) h++;
        if (h == p->nhosts && !(p->members[h] = sr__calloc((size_t)s->size, sizeof **p->members))) {
            snprintf(err, errlen, "hier: out of memory for the layout of %d ranks", s->size);
            hier_destroy(p);
            return NULL;
        }
        if (h == p->nhosts) p->nhosts++;
        p->host_of[g] = h;
        p->local_of[g] = p->count[h];
        p->members[h][p->count[h]++] = g;
        if (p->count[h] > p->maxl) p->maxl = p->count[h];
    }
    p->host = p->host_of[s->rank];
    char prefix[400], berr[768] = "";
    err[0] = 0;
    sr__pg_setup sub = *s;
    snprintf(prefix, sizeof prefix, "%slocal%d/", s->prefix, p->host);
    sub.prefix = prefix;
    sub.rank = p->local_of[s->rank];
    sub.size = p->count[p->host];
    p->local = L->create(NULL, &sub, berr, sizeof berr);
    if (!p->local) snprintf(err, errlen, "shared memory inside the host: %s", berr);
    sub = *s;
    /* every rank learns whether every host set up its shared memory before any leader waits for
       Gloo peers that will never come: a failure is everyone's, so pg.c may fall back alike */
    if (all_ok(s, "local", p->local != NULL, err, errlen) != 0) {
        hier_destroy(p);
        return NULL;
    }
    if (p->local_of[s->rank] == 0) {
        snprintf(prefix, sizeof prefix, "%sleaders/", s->prefix);
        sub.prefix = prefix;
        sub.rank = p->host;
        sub.size = p->nhosts;
        p->leaders = X->create(NULL, &sub, berr, sizeof berr);
        if (!p->leaders) {
            snprintf(err, errlen, "Gloo between the hosts: %s", berr);
            hier_destroy(p);
            return NULL;
        }
    }
    return p;
}

const sr__pg_backend_ops sr__hier_backend = {
    "hier",         hier_all_gather, hier_reduce_scatter, hier_all_reduce,
    hier_broadcast, hier_barrier,    hier_create,         hier_destroy,
};
