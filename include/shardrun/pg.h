/*
 * shardrun process groups: collectives over the ranks of a run.
 *
 * Lifecycle: the torch plugin's init hook creates the world group in every worker (rendezvous
 * through shardrun's store, then a Gloo context on CPU or an NCCL communicator on GPU) before the
 * task is loaded -> a main task gets it with sr_world(ctx) -> optional sub-groups with
 * sr_pg_split() (collective over the parent) -> operations, each submitted asynchronously and
 * completed with sr_work_wait() -> the groups are torn down when the worker exits.
 *
 * Every operation is collective: all ranks of the group call it in the same order with the same
 * count and dtype.  Operations on one group run one at a time in submission order, on that group's
 * communication thread (NCCL: its stream), so the caller can compute while they run; a caller that
 * waits for an operation the thread has not started yet runs it (and those queued before it) itself.  Buffers must stay valid
 * until the operation is waited for.  A failed or timed-out operation reports which operation and
 * which ranks did not arrive; the group is unusable afterwards (every later call fails).
 */
#ifndef SHARDRUN_PG_H
#define SHARDRUN_PG_H

#include <stddef.h>

#include "shardrun/api.h"
#include "shardrun/dtype.h"
#include "shardrun/task.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sr_pg sr_pg;
typedef struct sr_work sr_work;

typedef enum sr_redop { SR_SUM = 0, SR_AVG, SR_MAX } sr_redop;

/* The world group of this run, or NULL when none was created (no torch plugin, exec tasks). */
SR_API sr_pg *sr_world(sr_ctx *ctx);

SR_API int sr_pg_rank(const sr_pg *pg);
SR_API int sr_pg_size(const sr_pg *pg);
SR_API const char *sr_pg_backend(const sr_pg *pg); /* "gloo" or "nccl" */
/* How this group's ranks talk: "shm" (shared memory: gloo groups whose ranks share a host, unless
   [torch] transport = tcp), "hier" (shm inside each host, Gloo between hosts: gloo groups that span
   hosts with several ranks on one), "tcp" (Gloo) or "nccl". */
SR_API const char *sr_pg_transport(const sr_pg *pg);
SR_API const char *sr_pg_name(const sr_pg *pg);
/* The first error of the group, or "" */
SR_API const char *sr_pg_error(const sr_pg *pg);

/* Each submits one operation.  With work == NULL the call waits for it; otherwise *work is a
   handle for sr_work_wait().  Return 0, or -1 with sr_pg_error() set (bad arguments, or the
   group already failed). */
/* recv[r*count .. (r+1)*count) receives rank r's send[0 .. count) */
SR_API int sr_pg_all_gather(sr_pg *pg, const void *send, void *recv, size_t count, sr_dtype dtype, sr_work **work);
/* recv[0 .. count) = op over ranks of send[rank*count .. (rank+1)*count) */
SR_API int sr_pg_reduce_scatter(sr_pg *pg, const void *send, void *recv, size_t count, sr_dtype dtype, sr_redop op,
                                sr_work **work);
SR_API int sr_pg_all_reduce(sr_pg *pg, void *buf, size_t count, sr_dtype dtype, sr_redop op, sr_work **work);
SR_API int sr_pg_broadcast(sr_pg *pg, void *buf, size_t count, sr_dtype dtype, int root, sr_work **work);
SR_API int sr_pg_barrier(sr_pg *pg, sr_work **work);

/* Waits for the operation and frees the handle: 0, or -1 (the message is in sr_pg_error()). */
SR_API int sr_work_wait(sr_work *work);

/* Collective over `pg`: ranks with the same color form a new group, ordered by (key, rank);
   color < 0 joins none (*out = NULL).  Returns 0 or -1. */
SR_API int sr_pg_split(sr_pg *pg, int color, int key, sr_pg **out);

#ifdef __cplusplus
}
#endif
#endif
