/* One point of a bandwidth sweep: timing, bus bandwidth, the checked run (see pgbench_sweep.h). */
#define _POSIX_C_SOURCE 200809L
#include "pgbench_sweep.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const pgb_op_names[PGB_NOPS] = {"all_gather", "reduce_scatter", "all_reduce"};

static void *host_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
static int host_copy(void *dst, const void *src, size_t bytes) {
    if (bytes) memcpy(dst, src, bytes);
    return 0;
}
const pgb_mem pgb_host_mem = {host_alloc, free, host_copy, host_copy};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* small integers: every sum over ranks is exact in fp32 */
static float value(int rank, size_t i) { return (float)((rank + 1) * (int)(i % 13 + 1)); }

double pgb_busbw(pgb_op op, double algbw, int n) {
    if (n <= 1) return algbw;
    return algbw * (op == PGB_ALL_REDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n);
}

/* An all-reduce of one value held on the host, staged through `mem` (NCCL reads device memory only). */
static int reduce_one(sr_pg *pg, const pgb_mem *mem, void *value, sr_dtype dt, sr_redop op) {
    void *d = mem->alloc(8);
    int rc = !d || mem->to_device(d, value, sr_dtype_size(dt)) != 0 || sr_pg_all_reduce(pg, d, 1, dt, op, NULL) != 0 ||
             mem->to_host(value, d, sr_dtype_size(dt)) != 0;
    if (d) mem->free(d);
    return rc ? -1 : 0;
}

static int launch(sr_pg *pg, pgb_op op, void *send, void *recv, size_t count) {
    size_t per = count / (size_t)sr_pg_size(pg);
    switch (op) {
    case PGB_ALL_GATHER: return sr_pg_all_gather(pg, send, recv, per, SR_FLOAT32, NULL);
    case PGB_REDUCE_SCATTER: return sr_pg_reduce_scatter(pg, send, recv, per, SR_FLOAT32, SR_SUM, NULL);
    default: return sr_pg_all_reduce(pg, send, count, SR_FLOAT32, SR_SUM, NULL);
    }
}

/* Fills send with fresh data, runs op once and counts the elements that differ from the
   expected result; -1 when the operation or a copy failed. */
static long long verify(sr_pg *pg, const pgb_mem *mem, pgb_op op, void *send, void *recv, float *host, size_t count) {
    int r = sr_pg_rank(pg), n = sr_pg_size(pg);
    size_t per = count / (size_t)n;
    size_t nsend = op == PGB_ALL_GATHER ? per : count, nout = op == PGB_REDUCE_SCATTER ? per : count;
    for (size_t i = 0; i < nsend; i++) host[i] = value(r, i);
    if (mem->to_device(send, host, nsend * sizeof(float)) != 0) return -1;
    if (launch(pg, op, send, recv, count) != 0) return -1;
    if (mem->to_host(host, op == PGB_ALL_REDUCE ? send : recv, nout * sizeof(float)) != 0) return -1;
    long long errors = 0;
    float rank_sum = (float)(n * (n + 1) / 2);
    for (size_t i = 0; i < nout; i++) {
        float want;
        if (op == PGB_ALL_GATHER) want = value((int)(i / per), i % per);
        else if (op == PGB_REDUCE_SCATTER) want = rank_sum * (float)((r * per + i) % 13 + 1);
        else want = rank_sum * (float)(i % 13 + 1);
        errors += host[i] != want;
    }
    return errors;
}

int pgb_measure(sr_pg *pg, const pgb_mem *mem, pgb_op op, size_t count, int iters, int warmup, pgb_point *out) {
    int n = sr_pg_size(pg), rc = -1;
    size_t bytes = count * sizeof(float);
    void *send = mem->alloc(bytes), *recv = mem->alloc(bytes);
    float *host = malloc(bytes ? bytes : 1);
    long long e = 0;
    /* a rank short of memory must not leave the others waiting in a collective: all agree first */
    long long all_ok = send && recv && host;
    if (reduce_one(pg, mem, &all_ok, SR_INT64, SR_SUM) != 0 || all_ok != n) goto done;
    for (size_t i = 0; i < count; i++) host[i] = value(sr_pg_rank(pg), i);
    if (mem->to_device(send, host, bytes) != 0) goto done;
    for (int i = 0; i < warmup; i++)
        if (launch(pg, op, send, recv, count) != 0) goto done;
    if (sr_pg_barrier(pg, NULL) != 0) goto done;
    double t0 = now_s();
    for (int i = 0; i < iters; i++)
        if (launch(pg, op, send, recv, count) != 0) goto done;
    float dt = (float)((now_s() - t0) / (double)(iters > 0 ? iters : 1));
    /* the slowest rank defines the time */
    if (reduce_one(pg, mem, &dt, SR_FLOAT32, SR_MAX) != 0) goto done;
    e = verify(pg, mem, op, send, recv, host, count);
    if (e < 0) goto done;
    if (reduce_one(pg, mem, &e, SR_INT64, SR_SUM) != 0) goto done;
    out->count = count;
    out->bytes = (double)bytes;
    out->time_s = dt;
    out->algbw = dt > 0 ? out->bytes / dt / 1e9 : 0;
    out->busbw = pgb_busbw(op, out->algbw, n);
    out->errors = e;
    rc = 0;
done:
    if (send) mem->free(send);
    if (recv) mem->free(recv);
    free(host);
    return rc;
}
