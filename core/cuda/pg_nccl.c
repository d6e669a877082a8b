/*
 * The nccl backend (device buffers), in libshardrun_cuda.so: rank 0's ncclUniqueId travels
 * through shardrun's store (pg/nccl_id.h, reached through the setup's store calls),
 * ncclCommInitRank builds the world communicator, ncclCommSplit the sub-groups.  Each group has one communication stream; an operation is enqueued on it, then the
 * group's communication thread (pg.c) polls an event, checking ncclCommGetAsyncError, until it
 * completes or the timeout aborts the communicator.  Compiled and linked in CI; no GPU runs it
 * there.
 */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "cuda/cuda_parts.h"
#include "pg/backend.h"
#include "pg/nccl_id.h"

_Static_assert(sizeof(ncclUniqueId) == SR__NCCL_ID_BYTES, "pg/nccl_id.h: SR__NCCL_ID_BYTES is not NCCL's id size");

typedef struct nccl_pg {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t done;
    float *scratch; /* one float on the device, for barriers */
    int rank, size;
    double timeout_s;
} nccl_pg;

static ncclDataType_t nccl_type(sr_dtype d) {
    switch (d) {
    case SR_FLOAT16: return ncclFloat16;
    case SR_BFLOAT16: return ncclBfloat16;
    case SR_INT32: return ncclInt32;
    case SR_INT64: return ncclInt64;
    default: return ncclFloat32;
    }
}

static ncclRedOp_t nccl_op(sr_redop o) { return o == SR_AVG ? ncclAvg : o == SR_MAX ? ncclMax : ncclSum; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int nccl_failed(ncclResult_t r, const char *what, char *err, size_t errlen) {
    if (r == ncclSuccess || r == ncclInProgress) return 0;
    snprintf(err, errlen, "%s: %s", what, ncclGetErrorString(r));
    return 1;
}

/* Waits for what was enqueued on the group's stream: completion, an asynchronous NCCL error, or
   the timeout (then the communicator is aborted, so no rank hangs forever). */
static int finish(nccl_pg *p, ncclResult_t enqueued, const char *what, int *stuck, char *err, size_t errlen) {
    *stuck = -1;
    if (nccl_failed(enqueued, what, err, errlen)) return -1;
    cudaError_t ce = cudaEventRecord(p->done, p->stream);
    if (ce != cudaSuccess) {
        snprintf(err, errlen, "%s: cudaEventRecord: %s", what, cudaGetErrorString(ce));
        return -1;
    }
    double deadline = now_s() + p->timeout_s;
    while ((ce = cudaEventQuery(p->done)) == cudaErrorNotReady) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(p->comm, &async);
        if (nccl_failed(async, what, err, errlen)) {
            ncclCommAbort(p->comm);
            return -1;
        }
        if (now_s() > deadline) {
            ncclCommAbort(p->comm);
            snprintf(err, errlen, "%s: timed out; the communicator was aborted", what);
            return SR__PG_TIMEOUT;
        }
        usleep(50);
    }
    if (ce != cudaSuccess) {
        snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(ce));
        return -1;
    }
    return 0;
}

static int n_all_gather(void *impl, const void *send, void *recv, size_t count, sr_dtype dt, int *stuck, char *err,
                        size_t errlen) {
    nccl_pg *p = impl;
    return finish(p, ncclAllGather(send, recv, count, nccl_type(dt), p->comm, p->stream), "ncclAllGather", stuck, err,
                  errlen);
}

static int n_reduce_scatter(void *impl, const void *send, void *recv, size_t count, sr_dtype dt, sr_redop op,
                            int *stuck, char *err, size_t errlen) {
    nccl_pg *p = impl;
    return finish(p, ncclReduceScatter(send, recv, count, nccl_type(dt), nccl_op(op), p->comm, p->stream),
                  "ncclReduceScatter", stuck, err, errlen);
}

static int n_all_reduce(void *impl, void *buf, size_t count, sr_dtype dt, sr_redop op, int *stuck, char *err,
                        size_t errlen) {
    nccl_pg *p = impl;
    return finish(p, ncclAllReduce(buf, buf, count, nccl_type(dt), nccl_op(op), p->comm, p->stream), "ncclAllReduce",
                  stuck, err, errlen);
}

static int n_broadcast(void *impl, void *buf, size_t count, sr_dtype dt, int root, int *stuck, char *err,
                       size_t errlen) {
    nccl_pg *p = impl;
    return finish(p, ncclBroadcast(buf, buf, count, nccl_type(dt), root, p->comm, p->stream), "ncclBroadcast", stuck,
                  err, errlen);
}

static int n_barrier(void *impl, int *stuck, char *err, size_t errlen) {
    nccl_pg *p = impl;
    return finish(p, ncclAllReduce(p->scratch, p->scratch, 1, ncclFloat32, ncclSum, p->comm, p->stream),
                  "barrier (ncclAllReduce)", stuck, err, errlen);
}

/* The world communicator: rank 0 makes the unique id and publishes it in the store. */
static int init_world(nccl_pg *p, const sr__pg_setup *s, char *err, size_t errlen) {
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev == 0) {
        snprintf(err, errlen, "no CUDA device is visible (%s); use backend = gloo on CPU machines",
                 ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        return -1;
    }
    cudaSetDevice(s->local_rank % ndev);
    /* rank 0's id to every rank, through libshardrun (pg/nccl_id.h: the simulator makes the same
       requests) */
    ncclUniqueId id;
    if (s->rank == 0 && nccl_failed(ncclGetUniqueId(&id), "ncclGetUniqueId", err, errlen)) return -1;
    if (s->store_ops->nccl_id(s, &id, sizeof id, err, errlen) != 0) return -1;
    return nccl_failed(ncclCommInitRank(&p->comm, s->size, id, s->rank), "ncclCommInitRank", err, errlen) ? -1 : 0;
}

static void *n_create(void *parent, const sr__pg_setup *s, char *err, size_t errlen) {
    nccl_pg *p = sr__calloc(1, sizeof *p);
    p->rank = s->rank;
    p->size = s->size;
    p->timeout_s = s->timeout_s;
    int bad = parent ? nccl_failed(ncclCommSplit(((nccl_pg *)parent)->comm, s->color, s->key, &p->comm, NULL),
                                   "ncclCommSplit", err, errlen)
                     : init_world(p, s, err, errlen) != 0;
    if (!bad && (cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking) != cudaSuccess ||
                 cudaEventCreateWithFlags(&p->done, cudaEventDisableTiming) != cudaSuccess ||
                 cudaMalloc((void **)&p->scratch, sizeof(float)) != cudaSuccess)) {
        snprintf(err, errlen, "cannot create the communication stream: %s", cudaGetErrorString(cudaGetLastError()));
        bad = 1;
    }
    if (bad) {
        if (p->comm) ncclCommDestroy(p->comm);
        free(p);
        return NULL;
    }
    return p;
}

static void n_destroy(void *impl) {
    nccl_pg *p = impl;
    cudaStreamSynchronize(p->stream);
    ncclCommDestroy(p->comm);
    cudaFree(p->scratch);
    cudaEventDestroy(p->done);
    cudaStreamDestroy(p->stream);
    free(p);
}

/* handed to libshardrun in the library's table (cuda_lib_table.c) */
const sr__pg_backend_ops sr__nccl_backend = {
    "nccl", n_all_gather, n_reduce_scatter, n_all_reduce, n_broadcast, n_barrier, n_create, n_destroy,
};
