/*
 * The world group on the backend and transport this run uses (gloo over shm or tcp on CPUs, nccl
 * on GPUs; each line names the transport, sr_pg_transport): every collective x
 * dtype x reduction on counts of 1, odd and past a chunk boundary, each result checked element by
 * element on every rank; a split into two child groups; then bus bandwidth (pgbench_sweep.c, the
 * measurement examples/pgbench prints), on the same memory as the collectives: device memory for
 * nccl.
 *
 * Values: rank r holds b(i) * (2r + 1) with b(i) = +-2^(i%4): over n ranks the sum is b n^2, the
 * average b n and the maximum b (2n - 1) (or b for negative b), all exact in fp32 and the integer
 * types.  bf16 and fp16 sums may round in another order on another backend: within n units in the
 * last place.
 *
 * The ranks stay in step: after each size of each check they agree on its outcome (an all-gather
 * of every rank's pass flag), so all of them stop a line at the same size, the first one any rank
 * got wrong, and go on to the next line together.  A bug only some ranks hit (an index error on
 * ranks > 0) is one FAIL line naming that collective, not ranks waiting in different collectives
 * until [torch] timeout.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "checks.h"
#include "compare.h"
#include "pgbench_sweep.h"
#include "shardrun/half.h"

static const sr_dtype DTYPES[5] = {SR_FLOAT32, SR_FLOAT16, SR_BFLOAT16, SR_INT32, SR_INT64};
static const char *const OPS[3] = {"sum", "avg", "max"};

static double b_of(size_t i) { return (i % 2 ? -1.0 : 1.0) * (double)(1u << (i % 4)); }
static double value(int r, size_t i) { return b_of(i) * (2 * r + 1); }

static void put(void *p, sr_dtype dt, size_t i, double v) {
    switch (dt) {
    case SR_FLOAT32: ((float *)p)[i] = (float)v; break;
    case SR_FLOAT16: ((uint16_t *)p)[i] = sr_f32_to_f16((float)v); break;
    case SR_BFLOAT16: ((uint16_t *)p)[i] = sr_f32_to_bf16((float)v); break;
    case SR_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case SR_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    }
}
static double get(const void *p, sr_dtype dt, size_t i) {
    switch (dt) {
    case SR_FLOAT32: return ((const float *)p)[i];
    case SR_FLOAT16: return sr_f16_to_f32(((const uint16_t *)p)[i]);
    case SR_BFLOAT16: return sr_bf16_to_f32(((const uint16_t *)p)[i]);
    case SR_INT32: return ((const int32_t *)p)[i];
    default: return (double)((const int64_t *)p)[i];
    }
}
static double reduced(int op, int n, size_t i) {
    double b = b_of(i);
    return op == SR_SUM ? b * n * n : op == SR_AVG ? b * n : b > 0 ? b * (2 * n - 1) : b;
}
static double tol_of(sr_dtype dt, int op, int n) {
    if (dt == SR_BFLOAT16) return n / 128.0;
    if (dt == SR_FLOAT16) return n / 1024.0;
    if (dt == SR_FLOAT32 && op == SR_AVG) return 4e-7 * n; /* NCCL scales each input by 1/n first */
    return 0;
}

typedef struct pgc {
    sr_pg *pg;
    const sr__device *mem;
    int rank, n;
    void *dsend, *drecv; /* device buffers of the largest count * n elements of int64 */
    unsigned char *hsend, *hrecv;
    size_t cap; /* elements of 8 bytes each buffer holds */
} pgc;

enum { AG, RS, AR, BC };
static const char *const COLL[4] = {"all_gather", "reduce_scatter", "all_reduce", "broadcast"};

/* Runs one collective on `count` and checks this rank's result; 1 pass, 0 wrong, -1 the group failed. */
static int one(pgc *c, int coll, sr_dtype dt, int op, int root, size_t count, char *why, size_t wlen) {
    size_t es = sr_dtype_size(dt), n = (size_t)c->n;
    size_t nsend = coll == RS ? count * n : count, nout = coll == AG ? count * n : count;
    for (size_t i = 0; i < nsend; i++)
        put(c->hsend, dt, i, coll == BC && c->rank != root ? 0.0 : value(coll == BC ? root : c->rank, i));
    if (c->mem->to_device(c->dsend, c->hsend, nsend * es) != 0) return -1;
    int rc;
    switch (coll) {
    case AG: rc = sr_pg_all_gather(c->pg, c->dsend, c->drecv, count, dt, NULL); break;
    case RS: rc = sr_pg_reduce_scatter(c->pg, c->dsend, c->drecv, count, dt, (sr_redop)op, NULL); break;
    case AR: rc = sr_pg_all_reduce(c->pg, c->dsend, count, dt, (sr_redop)op, NULL); break;
    default: rc = sr_pg_broadcast(c->pg, c->dsend, count, dt, root, NULL); break;
    }
    if (rc != 0) {
        snprintf(why, wlen, "count %zu: %s", count, sr_pg_error(c->pg));
        return -1;
    }
    if (c->mem->to_host(c->hrecv, coll == AG || coll == RS ? c->drecv : c->dsend, nout * es) != 0) return -1;
    for (size_t i = 0; i < nout; i++) {
        double want;
        if (coll == AG) want = value((int)(i / count), i % count);
        else if (coll == RS) want = reduced(op, c->n, (size_t)c->rank * count + i);
        else if (coll == AR) want = reduced(op, c->n, i);
        else want = value(root, i);
        double got = get(c->hrecv, dt, i), tol = coll == AG || coll == BC ? 0 : tol_of(dt, op, c->n) * fabs(want);
        if (!(fabs(got - want) <= tol)) {
            snprintf(why, wlen, "count %zu: element [%zu] on rank %d: got %.9g, want %.9g", count, i, c->rank, got,
                     want);
            return 0;
        }
    }
    return 1;
}

/* The ranks' outcomes of one check, agreed: every rank's pass flag (1 or 0) through an all-gather
   of int32, on the device buffers (free again once this rank's result was read).  Returns 0 and,
   in `failed`, the ranks that got it wrong ("" when none); -1 when the group failed or the flags
   came back wrong (then `failed` says so and the collective checks stop on this rank). */
static int agree(pgc *c, int pass, char *failed, size_t len) {
    int32_t mine = pass == 1, *all = (int32_t *)c->hrecv;
    failed[0] = 0;
    if (c->mem->to_device(c->dsend, &mine, sizeof mine) != 0 ||
        sr_pg_all_gather(c->pg, c->dsend, c->drecv, 1, SR_INT32, NULL) != 0 ||
        c->mem->to_host(all, c->drecv, (size_t)c->n * sizeof mine) != 0) {
        snprintf(failed, len, "agreeing on the outcome (all_gather of the pass flags): %s", sr_pg_error(c->pg));
        return -1;
    }
    size_t used = 0;
    for (int q = 0; q < c->n; q++) {
        if (all[q] != 0 && all[q] != 1) {
            snprintf(failed, len, "agreeing on the outcome: the all_gather of the pass flags gave %d for rank %d",
                     (int)all[q], q);
            return -1;
        }
        if (!all[q] && used < len) used += (size_t)snprintf(failed + used, len - used, "%s%d", used ? ", " : "", q);
    }
    if (all[c->rank] != mine) {
        snprintf(failed, len, "agreeing on the outcome: the all_gather of the pass flags lost this rank's own flag");
        return -1;
    }
    return 0;
}

/* One line per collective x dtype x op over the counts, the ranks in step (agree()); -1 when the
   group failed. */
static int line(st_report *r, pgc *c, int coll, sr_dtype dt, int op, const size_t *counts, int nc) {
    char name[128], why[512] = "", list[128] = "", failed[256] = "";
    const char *transport = sr_pg_transport(c->pg);
    int ok = 1;
    size_t at = 0;
    for (int k = 0; k < nc && ok == 1 && !failed[0]; k++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%zu", l ? "," : "", counts[k]);
        at = counts[k];
        ok = one(c, coll, dt, op, coll == BC ? (k % 2 ? c->n - 1 : 0) : 0, counts[k], why, sizeof why);
        if (ok >= 0 && agree(c, ok, failed, sizeof failed) != 0) {
            snprintf(why, sizeof why, "count %zu: %s", counts[k], failed);
            ok = -1;
        }
    }
    if (coll == RS || coll == AR)
        snprintf(name, sizeof name, "%s %s %s over %s", COLL[coll], sr_dtype_name(dt), OPS[op], transport);
    else snprintf(name, sizeof name, "%s %s over %s", COLL[coll], sr_dtype_name(dt), transport);
    if (ok == 1 && !failed[0])
        st_line(r, 1, "collective", name, NULL, "counts %s on %d ranks (%s over %s): every element as expected%s", list,
                c->n, sr_pg_backend(c->pg), transport, coll == BC ? " (roots 0 and n-1)" : "");
    else if (ok == 1) /* right here, wrong on another rank: every rank stopped at this count */
        st_line(r, 1, "collective", name, NULL,
                "counts %s on %d ranks (%s over %s): right on this rank; rank %s got count %zu wrong", list, c->n,
                sr_pg_backend(c->pg), transport, failed, at);
    else
        st_line(r, 0, "collective", name, NULL, "%s (%s over %s)", why[0] ? why : "a copy to or from the device failed",
                sr_pg_backend(c->pg), transport);
    return ok < 0 ? -1 : 0;
}

static int bandwidth(st_report *r, pgc *c, int quick) {
    const pgb_mem mem = {c->mem->alloc, c->mem->free, c->mem->to_device, c->mem->to_host};
    int gpu = !strcmp(sr_pg_backend(c->pg), "nccl");
    /* nccl-tests' range on GPUs (1 MiB .. 1 GiB); a short one on CPUs, where it only proves the path */
    long long lo = 1 << 20, hi = quick ? 1 << 20 : gpu ? 1LL << 30 : 8 << 20;
    for (int op = 0; op < PGB_NOPS; op++) {
        double best = 0, at = 0, alg_at = 0;
        long long errors = 0;
        char metrics[2048] = "";
        int failed = 0;
        char bw_name[96];
        snprintf(bw_name, sizeof bw_name, "%s over %s", pgb_op_names[op], sr_pg_transport(c->pg));
        for (long long bytes = lo; bytes <= hi; bytes *= 2) {
            size_t count = (size_t)bytes / 4 / (size_t)c->n * (size_t)c->n;
            pgb_point p;
            if (pgb_measure(c->pg, &mem, (pgb_op)op, count, quick ? 2 : 5, 1, &p) != 0) {
                st_line(r, 0, "bandwidth", bw_name, NULL, "%lld bytes: %s", bytes,
                        sr_pg_error(c->pg)[0] ? sr_pg_error(c->pg) : "out of memory");
                failed = 1;
                break;
            }
            errors += p.errors;
            if (p.busbw > best) best = p.busbw, at = p.bytes, alg_at = p.algbw;
            size_t l = strlen(metrics);
            snprintf(metrics + l, sizeof metrics - l, "%salgbw_gbps@%lld=%.3f busbw_gbps@%lld=%.3f", l ? " " : "",
                     bytes, p.algbw, bytes, p.busbw);
        }
        if (failed) return sr_pg_error(c->pg)[0] ? -1 : 0;
        char m2[2100];
        snprintf(m2, sizeof m2, "busbw_gbps=%.3f %s", best, metrics);
        st_line(r, errors == 0, "bandwidth", bw_name, m2,
                "%s over %s, fp32, %lld B .. %lld B: peak bus bandwidth %.2f GB/s (algbw %.2f GB/s) at %.0f B; %lld "
                "wrong elements",
                sr_pg_backend(c->pg), sr_pg_transport(c->pg), lo, hi, best, alg_at, at, errors);
    }
    return 0;
}

int st_check_pg(st_report *r, const st_dut *d, sr_pg *pg, int quick) {
    pgc c = {.pg = pg, .mem = d->pg_mem, .rank = sr_pg_rank(pg), .n = sr_pg_size(pg)};
    /* 65539: odd, and past Gloo's and NCCL's chunking of small messages */
    const size_t counts[] = {1, 7, 1021, 65539};
    int nc = quick ? 3 : 4;
    c.cap = counts[nc - 1] * (size_t)c.n;
    c.dsend = c.mem->alloc(c.cap * 8);
    c.drecv = c.mem->alloc(c.cap * 8);
    c.hsend = sr__malloc(c.cap * 8);
    c.hrecv = sr__malloc(c.cap * 8);
    int rc = 0;
    if (!c.dsend || !c.drecv || !c.hsend || !c.hrecv) {
        st_line(r, 0, "collective", "buffers", NULL, "cannot allocate %zu bytes", c.cap * 8 * 2);
        rc = -1;
    }
    for (int coll = AG; coll <= BC && !rc; coll++)
        for (int t = 0; t < 5 && !rc; t++)
            for (int op = SR_SUM; op <= SR_MAX && !rc; op++) {
                if ((coll == AG || coll == BC) && op != SR_SUM) continue;
                if (op == SR_AVG && (DTYPES[t] == SR_INT32 || DTYPES[t] == SR_INT64)) continue; /* refused by design */
                rc = line(r, &c, coll, DTYPES[t], op, counts, nc);
            }
    if (!rc) {
        int ok = sr_pg_barrier(pg, NULL) == 0;
        char bname[64];
        snprintf(bname, sizeof bname, "barrier over %s", sr_pg_transport(pg));
        st_line(r, ok, "collective", bname, NULL, ok ? "every rank passed it" : "%s", sr_pg_error(pg));
        if (!ok) rc = -1;
    }
    if (!rc) { /* child groups: even and odd ranks, then an all-reduce in each */
        sr_pg *child = NULL;
        int ok = sr_pg_split(pg, c.rank % 2, c.rank, &child) == 0 && child;
        int64_t want = 0;
        for (int q = c.rank % 2; q < c.n; q += 2) want += q + 1;
        int64_t got = c.rank + 1;
        if (ok) {
            void *dv = c.mem->alloc(8);
            ok = dv && c.mem->to_device(dv, &got, 8) == 0 &&
                 sr_pg_all_reduce(child, dv, 1, SR_INT64, SR_SUM, NULL) == 0 && c.mem->to_host(&got, dv, 8) == 0 &&
                 got == want;
            if (dv) c.mem->free(dv);
        }
        char sname[96];
        snprintf(sname, sizeof sname, "split + all_reduce in the child over %s", sr_pg_transport(pg));
        st_line(r, ok, "collective", sname, NULL,
                ok ? "even and odd ranks in two groups: sums as expected" : "child group: got %lld, want %lld (%s)",
                (long long)got, (long long)want, child ? sr_pg_error(child) : sr_pg_error(pg));
    }
    if (!rc) rc = bandwidth(r, &c, quick);
    if (c.dsend) c.mem->free(c.dsend);
    if (c.drecv) c.mem->free(c.drecv);
    free(c.hsend), free(c.hrecv);
    return rc;
}
