#define _GNU_SOURCE
#include "cli/key_probe.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "fsdp/model_desc.h"
#include "shardrun/model.h"
#include "task/ctx.h"
#include "trainer/resume.h"
#include "trainer/train_args.h"

static _Noreturn void probe(sr__run *run, int local_rank, const sr__env_block *env) {
    /* the task's own chatter (what it loaded) is for its real run; its errors go to stderr */
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, STDOUT_FILENO), close(devnull);
    if (sr__env_block_apply(env) != 0) _exit(SR__EXIT_FAILED);
    void *h = dlopen(run->task.path, RTLD_NOW | RTLD_LOCAL);
    const sr_task *t = h ? dlsym(h, SR_TASK_SYMBOL) : NULL;
    if (!t || !t->model) {
        sr__log(SR_LOG_ERROR, "cannot load task %s: %s", run->task.path, h ? "no model task" : dlerror());
        _exit(SR__EXIT_CONFIG);
    }
    const char *name = t->name ? t->name : run->task.path;
    sr_topology topo;
    sr__layout_topology(&run->layout, local_rank, &topo);
    sr_ctx *ctx = sr__ctx_new(&topo, &run->cfg);
    if (!ctx) {
        sr__log(SR_LOG_ERROR, "out of memory for the task's context");
        _exit(SR__EXIT_FAILED);
    }
    sr__train_args args; /* the trainer reads its keys first, as in a worker */
    if (sr__train_args_read(ctx, &args) != 0) _exit(SR__EXIT_CONFIG);
    sr_model *model = sr__model_new();
    if (!model) {
        sr__log(SR_LOG_ERROR, "out of memory for the model's description");
        _exit(SR__EXIT_FAILED);
    }
    void *state = t->model->create(ctx, model);
    if (!state) {
        sr__log(SR_LOG_ERROR, "task %s: create() failed (see above)", name);
        _exit(SR__EXIT_CONFIG);
    }
    int bad = sr__ctx_check_task_keys(ctx, name, sr__trainer_keys) != 0;
    if (!bad) bad = sr__resume_check_allow_names(ctx, args.resume_allow_changes) != 0;
    /* [task] freeze's patterns against the described model: one that matches nothing is a
       configuration error found here, before any worker starts (a faulty description is left to the
       workers, which report it as before) */
    if (!bad && !model->errors && model->nparams) bad = sr__model_freeze(model, args.freeze, name) != 0;
    if (t->model->destroy) t->model->destroy(state);
    fflush(NULL);
    _exit(bad ? SR__EXIT_CONFIG : SR__EXIT_OK);
}

int sr__probe_model_keys(sr__run *run, int local_rank, const sr__env_block *env) {
    if (run->task.type != SR__TASK_SO || run->task.kind != SR_TASK_MODEL) return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        sr__log(SR_LOG_WARN, "cannot check the model task's [task] keys (fork failed)");
        return 0;
    }
    if (pid == 0) probe(run, local_rank, env);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {}
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : SR__EXIT_CONFIG;
}

int sr__probe_run_keys(sr__run *run) {
    if (run->task.type != SR__TASK_SO || run->task.kind != SR_TASK_MODEL) return 0;
    sr__env_block b = {0};
    sr__diag diag = {0};
    int rc = 0;
    if (sr__run_build_env(run, run->layout.first_local, &b, &diag) == 0)
        rc = sr__probe_model_keys(run, run->layout.first_local, &b);
    sr__diag_clear(&diag); /* sr__run_prepare built and checked this environment already */
    sr__env_block_free(&b);
    return rc;
}
