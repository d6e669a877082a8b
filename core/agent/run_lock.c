/* The output folder's lock for a run (see run_lock.h). */
#include "agent/run_lock.h"

#include <stdlib.h>
#include <string.h>

#include "agent/run_status.h"
#include "base/alloc.h"
#include "base/log.h"
#include "trainer/output_dir.h"

int sr__run_lock_take(sr__run *run, sr__output_lock **out) {
    *out = NULL;
    /* rank 0's agent only: the ranks of one launch, on every node, share its lock */
    if (!run->model_task || run->layout.node_rank != 0 || run->layout.first_local != 0) return 0;
    sr__setting *s = sr__config_get(&run->cfg, "task", "output_dir");
    if (!s || !s->value || !*s->value) return 0;
    /* resolved as the trainer resolves it (sr_config_path): the job file's folder for a relative
       path written there, the current folder otherwise */
    char *dir =
        sr__config_path_moves(&run->cfg, s) ? sr__config_absolute(&run->cfg, s->from, s->value) : sr__strdup(s->value);
    char why[4096], note[2048];
    if (!dir) {
        sr__log(SR_LOG_ERROR, "out of memory for [task] output_dir");
        return SR__EXIT_CONFIG;
    }
    int rc = SR__EXIT_OK;
    /* a folder this run cannot make or write in needs no lock: every rank checks it too and
       fails before step 0, in the results list as a configuration error */
    int ready = sr__output_dir_prepare(dir, why, sizeof why);
    if (ready == -2) { /* the ranks may well get the memory: the run must not go on without its lock */
        sr__log(SR_LOG_ERROR, "%s; the run did not start", why);
        rc = SR__EXIT_FAILED;
    } else if (ready == 0) {
        sr__lock_owner me;
        sr__lock_owner_self(&me, run->rdzv.job_id, run->rdzv.requeue_key);
        if (sr__output_lock_take(dir, &me, out, note, sizeof note, why, sizeof why) != 0) {
            sr__log(SR_LOG_ERROR, "%s", why);
            rc = SR__EXIT_CONFIG;
        } else {
            if (note[0]) sr__log(SR_LOG_WARN, "%s", note);
            sr__run_status_begin(dir, run->rdzv.job_id); /* `shardrun status DIR` (run_status.h) */
        }
    }
    free(dir);
    return rc;
}

int sr__run_lock_release(sr__output_lock *l, int code) {
    char why[2048];
    if (sr__output_lock_release(l, why, sizeof why) == 0) return code;
    sr__log(SR_LOG_ERROR, "%s", why);
    return code == SR__EXIT_OK ? SR__EXIT_FAILED : code;
}
