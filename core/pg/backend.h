/*
 * What a process-group backend provides to the frontend (pg.c): blocking collectives run on the
 * group's communication thread, and the creation of a child group.  gloo (pg/gloo.c) works on
 * CPU buffers over TCP; shm (pg/shm.c) on CPU buffers
 * through shared memory, for groups whose ranks share a host; nccl (cuda/pg_nccl.c, in libshardrun_cuda.so) on device buffers.
 * Return codes: 0 ok, -1 error (message in err), SR__PG_TIMEOUT when a peer did not deliver in time
 * (*stuck set to that peer's rank in the group when known, else -1).
 */
#ifndef SR__CORE_PG_BACKEND_H
#define SR__CORE_PG_BACKEND_H

#include <pthread.h>
#include <stddef.h>

#include "shardrun/pg.h"
#include "store/store.h"

#define SR__PG_TIMEOUT (-2)

struct sr__pg_setup;

/* The store calls a backend may make, with the contracts of sr__store_set/get/wait/add/fetch/error
   (store/store.h), and the exchange over them that the nccl backend shares with bench/store_sim.c
   (nccl_id: sr__pg_nccl_id, pg/nccl_id.h).  They come through this table because
   libshardrun_cuda.so reaches nothing of libshardrun but its public API: the sr__ functions are not
   exported. */
typedef struct sr__pg_store_ops {
    int (*set)(sr__store *c, const char *key, const void *value, size_t len);
    int (*get)(sr__store *c, const char *key, void **value, size_t *len);
    int (*wait)(sr__store *c, const char *const *keys, int n, double timeout_s, char *missing, size_t mlen);
    long long (*add)(sr__store *c, const char *key, long long delta);
    int (*fetch)(sr__store *c, const char *const *keys, int n, double timeout_s, void **values, size_t *lens,
                 char *missing, size_t mlen);
    const char *(*error)(const sr__store *c);
    int (*nccl_id)(const struct sr__pg_setup *s, void *id, size_t len, char *err, size_t errlen);
} sr__pg_store_ops;

/* What a backend needs to create a group (world or child). */
typedef struct sr__pg_setup {
    sr__store *store;
    const sr__pg_store_ops *store_ops; /* calls on `store`, made holding store_lock */
    pthread_mutex_t *store_lock;
    const char *prefix;   /* store key prefix of this group, e.g. "pg/world/" */
    int rank, size;       /* within the new group */
    int color, key;       /* child groups: the split's arguments */
    const char *hostname; /* where Gloo listens */
    const char *iface;    /* GLOO_SOCKET_IFNAME, or NULL */
    int local_rank;       /* nccl: the device */
    double timeout_s;
    unsigned long long run_hash; /* shm: a hash of the run's store token, and the job's attempt, */
    int attempt;                 /* for segment names no other run or attempt uses */
    const int *hosts;            /* per rank of the new group: an index naming its host (hier) */
} sr__pg_setup;

typedef struct sr__pg_backend_ops {
    const char *name;
    int (*all_gather)(void *impl, const void *send, void *recv, size_t count, sr_dtype dt, int *stuck, char *err,
                      size_t errlen);
    int (*reduce_scatter)(void *impl, const void *send, void *recv, size_t count, sr_dtype dt, sr_redop op, int *stuck,
                          char *err, size_t errlen);
    int (*all_reduce)(void *impl, void *buf, size_t count, sr_dtype dt, sr_redop op, int *stuck, char *err,
                      size_t errlen);
    int (*broadcast)(void *impl, void *buf, size_t count, sr_dtype dt, int root, int *stuck, char *err, size_t errlen);
    int (*barrier)(void *impl, int *stuck, char *err, size_t errlen);
    /* a child group from a parent's impl (parent NULL: the world) */
    void *(*create)(void *parent, const sr__pg_setup *setup, char *err, size_t errlen);
    void (*destroy)(void *impl);
} sr__pg_backend_ops;

/* pg/gloo.c's; the nccl backend lives in libshardrun_cuda.so, in the table of device/cuda_lib.h */
extern const sr__pg_backend_ops sr__gloo_backend;

#endif
