/*
 * The shm transport: collectives of a group whose ranks share a host, through POSIX shared
 * memory (pg/shm.c).  pg.c picks it per group at creation, when [torch] transport allows it and
 * every member published the same host identity (sr__shm_host_id); other groups use Gloo.
 */
#ifndef SR__CORE_PG_SHM_H
#define SR__CORE_PG_SHM_H

#include <stddef.h>

#include "pg/backend.h"

extern const sr__pg_backend_ops sr__shm_backend;

/* How the creation error starts when a rank did not come in time: unlike the other failures, which
   every rank learns alike, a late rank may still be on its way, so no rank falls back to Gloo. */
#define SR__SHM_LATE "shm: not every rank "
/* How it starts when a rank ran out of memory: every rank fails with it (no fallback to Gloo,
   which would only hide it). */
#define SR__SHM_OOM "shm: out of memory"

/* What makes two processes able to share a segment: the host name, the kernel's boot id, and the
   IPC, mount and pid namespaces (a container on the same kernel has its own /dev/shm and pids),
   and `extra` ($SHARDRUN_HOST_ID from the worker's settings; ranks that differ there are on
   "other hosts"; NULL or "" when unset).
   Writes it into out; never fails (unreadable parts are left empty, which only makes a match less
   likely, never wrong: a missing boot id adds the pid, so such a rank matches nobody). */
void sr__shm_host_id(char *out, size_t len, const char *extra);

/* The run part of the groups' file names, from the run's store token. */
unsigned long long sr__shm_run_hash(const char *token);
/* Unlinks the run's files whose creating process is gone (the agent calls it after each attempt:
   a group's rank 0 killed between creating its file and the moment every rank mapped it leaves
   its name behind).  Files of live processes, and of other runs, are kept.  Returns how many it
   removed. */
int sr__shm_sweep(const char *token);

#endif
