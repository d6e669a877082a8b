/*
 * How the engine fails: the message of a failed collective or task call, and the ranks agreeing
 * on whether any of them failed before a collective that needs all of them (a checkpoint, a
 * weights file: all or nothing).
 */
#include <stdlib.h>

#include "base/alloc.h"
#include "base/log.h"
#include "fsdp/engine_internal.h"

/* ---- errors ---------------------------------------------------------------------------------- */

int sr__engine_pg_fail(sr_pg *pg, const char *what) {
    sr__log(SR_LOG_ERROR, "FSDP %s failed: %s", what, pg ? sr_pg_error(pg) : "no process group");
    return -1;
}

int sr__engine_task_fail(sr__engine *e, const char *what, int mi) {
    sr__log(SR_LOG_ERROR, "task %s: %s of module %s returned an error", e->task, what,
            mi >= 0 ? e->model->mods[mi].name : "(loss)");
    return -1;
}

/* ---- agreeing on failure -------------------------------------------------------------------------- */

int sr__engine_agree(sr__engine *e, sr_pg *pg, int failed) { return sr__engine_agree_rc(e, pg, failed ? -1 : 0); }

int sr__engine_agree_rc(sr__engine *e, sr_pg *pg, int rc) {
    if (rc < -2 || rc > 0) rc = -1;
    if (!pg) return rc;
    int v = -rc, *d = (int *)e->scalar; /* 2 (bad input) outranks 1 (failed) */
    e->dev->to_device(d, &v, sizeof v);
    if (sr_pg_all_reduce(pg, d, 1, SR_INT32, SR_MAX, NULL) != 0) {
        sr__log(SR_LOG_ERROR, "%s", sr_pg_error(pg));
        return -1;
    }
    e->dev->to_host(&v, d, sizeof v);
    return -v;
}

/* Every rank's `mine`, in rank order, into a malloc'ed *all of *n entries (1 without a process group).
   Collective: the ranks first agree on `failed` and on their own allocations, so that one that
   cannot take part makes every rank return -1 instead of leaving the others in the gather. */
int sr__engine_gather_u64(sr__engine *e, int failed, uint64_t mine, const char *what, uint64_t **all, size_t *n) {
    *n = e->world ? (size_t)e->world_size : 1;
    *all = sr__malloc(*n * sizeof **all);
    void *send = e->world ? e->dev->alloc(sizeof mine) : NULL,
         *recv = e->world ? e->dev->alloc(*n * sizeof mine) : NULL;
    if (!*all || (e->world && (!send || !recv))) {
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for %s", what);
        failed = 1;
    }
    int rc = sr__engine_agree(e, e->world, failed);
    if (rc == 0 && e->world) {
        e->dev->to_device(send, &mine, sizeof mine);
        if (sr_pg_all_gather(e->world, send, recv, 2, SR_INT32, NULL) != 0) {
            sr__log(SR_LOG_ERROR, "checkpoint: %s", sr_pg_error(e->world));
            rc = -1;
        } else {
            e->dev->to_host(*all, recv, *n * sizeof mine);
        }
    } else if (rc == 0) {
        (*all)[0] = mine;
    }
    if (send) e->dev->free(send);
    if (recv) e->dev->free(recv);
    if (rc) free(*all), *all = NULL;
    return rc;
}
