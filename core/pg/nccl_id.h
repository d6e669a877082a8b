/*
 * NCCL's unique id through the store: rank 0 of the world made it (ncclGetUniqueId) and publishes
 * it at <prefix>unique_id; every other rank waits for it and reads it.  It lives in libshardrun,
 * not beside the nccl backend in libshardrun_cuda.so, so that bench/store_sim.c makes the same
 * requests without CUDA: the backend reaches it through its setup's store calls
 * (sr__pg_store_ops.nccl_id, pg/backend.h), the simulator calls it with bytes of the same size.
 */
#ifndef SR__CORE_PG_NCCL_ID_H
#define SR__CORE_PG_NCCL_ID_H

#include <stddef.h>

#include "pg/backend.h"

/* sizeof(ncclUniqueId) (NCCL_UNIQUE_ID_BYTES; cuda/pg_nccl.c checks it) */
#define SR__NCCL_ID_BYTES 128

/* Rank 0: publishes id[0..len); the others: fill id[0..len) with rank 0's, waiting up to the
   setup's timeout.  0, or -1 with a message. */
int sr__pg_nccl_id(const sr__pg_setup *s, void *id, size_t len, char *err, size_t errlen);

#endif
