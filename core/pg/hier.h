/*
 * The hierarchical transport (pg/hier.c): a gloo group that spans hosts, with several of its ranks
 * on at least one of them, talks through shared memory inside each host and Gloo between one
 * leader per host.  pg.c picks it at group creation, with the shm transport on.
 */
#ifndef SR__CORE_PG_HIER_H
#define SR__CORE_PG_HIER_H

#include "pg/backend.h"

extern const sr__pg_backend_ops sr__hier_backend;

#endif
