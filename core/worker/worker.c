#define _GNU_SOURCE
#include "worker/worker.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardrun/model.h"
#include "shardrun/task.h"
#include "base/abi.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/progress.h"
#include "config/worker_settings.h"
#include "device/pool.h"
#include "task/ctx.h"
#include "trainer/trainer.h"

static void write_all(int fd, const char *s, size_t n) {
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w, n -= (size_t)w;
    }
}

static _Noreturn void run_main_task(sr__run *run, int local_rank, int results_fd) {
    /* Output goes through a pipe to the agent: line-buffer it so lines arrive whole and in time. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *h = dlopen(run->task.path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        sr__log(SR_LOG_ERROR, "cannot load task %s: %s", run->task.path, dlerror());
        _exit(SR__EXIT_CONFIG);
    }
    const sr_task *t = dlsym(h, SR_TASK_SYMBOL);
    if (!t || t->abi_version != SR_TASK_ABI_VERSION || !SR__REACHES(sr_task, t->struct_size, model) ||
        (t->kind == SR_TASK_MAIN    ? !t->main
         : t->kind == SR_TASK_MODEL ? !t->model
                                    : 1)) {
        /* the agent checked the file; this only fires if it changed since */
        sr__log(SR_LOG_ERROR, "task %s no longer has a valid %s", run->task.path, SR_TASK_SYMBOL);
        _exit(SR__EXIT_CONFIG);
    }
    sr_topology topo;
    sr__layout_topology(&run->layout, local_rank, &topo);
    sr_ctx *ctx = sr__ctx_new(&topo, &run->cfg);
    if (!ctx) {
        sr__log(SR_LOG_ERROR, "out of memory for the task's context (local rank %d)", local_rank);
        _exit(SR__EXIT_FAILED);
    }
    sr__ctx_set_tty(ctx, run->stdout_tty);
    /* a model task's trainer says "started" itself, once set-up is over and training begins */
    if (t->kind == SR_TASK_MAIN) sr__progress_send(SR__PROGRESS_STARTED, "main");
    int rc = t->kind == SR_TASK_MAIN ? t->main(ctx, run->task.argc, run->task.argv)
                                     : sr__trainer_run(ctx, t->name ? t->name : run->task.path, t->model);
    int code = rc >= 0 && rc <= 255 ? rc : 1;
    if (t->kind == SR_TASK_MAIN) sr__ctx_send_unread(ctx); /* the agent names keys no rank read */
    char *json = sr__ctx_result_json(ctx, code);
    write_all(results_fd, json, strlen(json));
    free(json);
    close(results_fd);
    sr__run_plugins_finish(run, local_rank, code);
    fflush(NULL);
    /* _exit: the agent's atexit handlers, inherited through fork, are not ours to run */
    _exit(code);
}

_Noreturn void sr__worker_run(sr__run *run, int local_rank, int results_fd) {
    sr__progress_set_fd(results_fd);
    sr__diag diag = {0};
    sr__env_block block = {0};
    if (sr__run_build_env(run, local_rank, &block, &diag) != 0) {
        sr__diag_flush(&diag);
        _exit(SR__EXIT_CONFIG);
    }
    for (size_t i = 0; i < block.n; i++)
        sr__log(SR_LOG_DEBUG, "%s %s %s%s%s", block.v[i].setter, block.v[i].value ? "sets" : "unsets", block.v[i].name,
                block.v[i].value ? "=" : "", block.v[i].value ? block.v[i].value : "");
    if (sr__env_block_apply(&block) != 0) {
        sr__log(SR_LOG_ERROR, "cannot apply the environment: %s", strerror(errno));
        _exit(SR__EXIT_CONFIG);
    }
    sr__env_block_free(&block);
    /* which launch of the job this is (store/rdzv.h): a restarted trainer resumes only from its own
       checkpoints; set here, not by a plugin, because it is no configuration of the job */
    if (run->rdzv.job_id[0]) setenv("SHARDRUN_JOB_ID", run->rdzv.job_id, 1);
    if (run->rdzv.requeue_key[0]) setenv("SHARDRUN_REQUEUE_KEY", run->rdzv.requeue_key, 1);
    else unsetenv("SHARDRUN_REQUEUE_KEY");
    /* an elastic job: the ranks the job file's batch keys describe (MAX nodes), so that the trainer
       keeps the global batch whatever the current world (docs/elastic.md) */
    if (run->layout.elastic) {
        char ranks[32];
        snprintf(ranks, sizeof ranks, "%d", run->layout.nnodes_max * run->layout.nproc_per_node);
        setenv("SHARDRUN_ELASTIC_RANKS", ranks, 1);
    } else {
        unsetenv("SHARDRUN_ELASTIC_RANKS");
    }
    /* A task's worker reads its settings once, here, before the plugins' init hooks (which form the
       process group from them) and the task: a bad value is a configuration error before any work.
       An exec: program reads its own environment. */
    if (run->task.type != SR__TASK_EXEC) {
        if (sr__worker_settings_load(run->model_task, &diag) != 0) {
            sr__diag_flush(&diag);
            _exit(SR__EXIT_CONFIG);
        }
        const sr__worker_settings *ws = sr__worker_settings_get();
        sr__prof_enable(ws->profile);
        if (ws->omp_threads) sr__pool_set_threads(ws->omp_threads);
    }
    /* A peer that died closes its sockets: a write to one must fail the collective (EPIPE, named
       in the error) rather than kill this rank with SIGPIPE, which would blame the wrong rank.
       Not for exec: programs, which would inherit the ignored signal across exec. */
    if (run->task.type != SR__TASK_EXEC) signal(SIGPIPE, SIG_IGN);
    /* an init hook that fails (a process group that could not form) is the run failing, not bad input */
    if (sr__run_plugins_init(run, local_rank) != 0) _exit(SR__EXIT_FAILED);
    if (run->task.type == SR__TASK_EXEC) {
        sr__progress_send(SR__PROGRESS_STARTED, "exec"); /* a program that fails later may be restarted */
        execv(run->task.path, run->task.argv);
        sr__log(SR_LOG_ERROR, "cannot start %s: %s", run->task.path, strerror(errno));
        _exit(SR__EXIT_CANNOT_EXEC);
    }
    run_main_task(run, local_rank, results_fd);
}
