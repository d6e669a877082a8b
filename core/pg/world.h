/*
 * Process groups inside shardrun: creating the world group in a worker (the torch plugin's init
 * hook, through the host API) and handing it to the task context.
 */
#ifndef SR__CORE_PG_INTERNAL_H
#define SR__CORE_PG_INTERNAL_H

#include "shardrun/pg.h"

typedef struct sr__pg_world_args {
    const char *store_host;
    int store_port;
    const char *token;
    int rank, size, local_rank;
    const char *backend;  /* "gloo" or "nccl" */
    const char *hostname; /* where this rank's Gloo listens */
    double timeout_s;
    int attempt;           /* the job's restart count: its keys are not an earlier attempt's */
    const char *transport; /* gloo: "auto", "shm" (groups on one host) or "tcp"; NULL: auto */
    /* from the worker's settings (config/worker_settings.h), which this layer cannot include */
    const char *iface;   /* GLOO_SOCKET_IFNAME: the interface Gloo uses across hosts; NULL: unset */
    const char *host_id; /* SHARDRUN_HOST_ID, added to the host identity; NULL: unset */
    const char *fault;   /* SHARDRUN_DEBUG_PG_FAULT (pg/fault.h); NULL: none */
} sr__pg_world_args;

/* Connects to the store, meets every rank (naming the ones that do not arrive), creates the
   backend.  NULL with a message on failure. */
sr_pg *sr__pg_create_world(const sr__pg_world_args *a, char *err, size_t errlen);
/* World creation's store traffic alone, for bench/store_sim.c: the same connection, host identity
   (host_id; NULL: this machine's), meetings and host table as sr__pg_create_world, with
   `stand_in` (pg/backend.h) in place of the transport: its create() makes the transport's exchange
   through the store and opens no connection.  Everything is released before it returns.  0, or -1
   with a message. */
struct sr__pg_backend_ops;
int sr__pg_rehearse_world(const sr__pg_world_args *a, const struct sr__pg_backend_ops *stand_in, const char *host_id,
                          char *err, size_t errlen);
/* The world group of this process (set by the torch plugin's init), or NULL. */
sr_pg *sr__pg_world(void);

#endif
