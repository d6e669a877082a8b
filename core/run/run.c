/* sr__run_prepare: everything the agent checks before a worker starts, in the order of the
   life of a run (docs/architecture.md): job file -> overrides -> plugins -> sections -> layout ->
   task -> validate -> every local worker's environment. */
#define _GNU_SOURCE
#include "run/run.h"

#include "shardrun/task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/hash64.h"
#include "base/strbuf.h"
#include "config/env_foreign.h"
#include "config/env_table.h"
#include "config/env_values.h"
#include "config/value.h"
#include "store/fingerprint.h"

extern char **environ;

static void load_plugins(sr__run *run) {
    sr__job *cfg = &run->cfg;
    char **names = sr__split_path(NULL);
    const char *list = sr__config_value(cfg, "shardrun", "plugins");
    const sr__setting *where = sr__config_get(cfg, "shardrun", "plugins");
    char **dirs = sr__plugin_dirs(sr__config_value(cfg, "shardrun", "plugin_path"));
    size_t n = 0;
    if (!names || !dirs) {
        sr__diag_add(&cfg->diag, "out of memory for the plugins' folders");
        list = NULL;
    }
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        char *name = sr__strndup(p, comma ? (size_t)(comma - p) : strlen(p));
        p = comma ? comma + 1 : p + strlen(p);
        char **g = name ? sr__realloc(names, (n + 2) * sizeof *names) : NULL;
        if (!g) {
            sr__diag_add(&cfg->diag, "out of memory for the plugins of plugins = %s", list);
            free(name);
            break;
        }
        names = g;
        int dup = 0;
        for (size_t i = 0; i < n && !dup; i++) dup = !strcmp(names[i], name);
        if (dup) {
            sr__diag_add(&cfg->diag, "%s: plugin \"%s\" is listed twice in plugins = %s; list it once", where->where,
                         name, list);
            free(name);
            continue;
        }
        names[n++] = name;
        names[n] = NULL;
    }
    run->plugins = sr__calloc(n ? n : 1, sizeof *run->plugins);
    if (!run->plugins) sr__diag_add(&cfg->diag, "out of memory for %zu plugins", n);
    for (size_t i = 0; i < n && run->plugins; i++) {
        /* `path` first: it decides which file declares the section's other keys */
        sr__config_resolve_key(cfg, names[i], &sr__plugin_host_keys[0]);
        if (sr__plugin_load(names[i], sr__config_value(cfg, names[i], "path"), dirs, where ? where->where : NULL,
                            &run->plugins[run->nplugins], &cfg->diag) == 0)
            run->nplugins++;
    }
    sr__plugins_check_set(run->plugins, run->nplugins, &cfg->diag);
    sr__free_strv(names);
    sr__free_strv(dirs);
}

/* SHARDRUN_* variables that match no key of this run are typos as a rule (SHARDRUN_NPROC_PER_NOD,
   SHARDRUN_TORCH_BACKEN): a configuration error, as a misspelt key in the job file is, before any
   worker starts.  SHARDRUN_TASK_* are [task] keys, free-form, checked once the task has read its
   own; the variables shardrun reads that are not keys (SHARDRUN_RDZV_TOKEN, SHARDRUN_DEBUG_*,
   SHARDRUN_PROFILE, ...) are known. */
static void check_stray_env(sr__run *run) {
    char var[300];
    sr__env_values_check(&run->cfg.diag); /* the known ones' values, SHARDRUN_TASK_* names */
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "SHARDRUN_", 9) || !strncmp(*e, "SHARDRUN_TASK_", 14)) continue;
        size_t len = (size_t)(strchr(*e, '=') - *e);
        int known = 0;
        const char *cands[512];
        size_t nc = 0;
        for (size_t i = 0; i < run->cfg.nset && !known; i++) {
            sr__key_env_name(run->cfg.set[i].section, run->cfg.set[i].key, var, sizeof var);
            known = strlen(var) == len && !strncmp(*e, var, len);
            char *cand = nc < 511 ? sr__strdup(var) : NULL; /* out of memory: one suggestion fewer */
            if (cand) cands[nc++] = cand;
        }
        /* the variables shardrun reads that are not keys (SHARDRUN_RDZV_TOKEN, SHARDRUN_DEBUG_*) */
        if (!known) known = sr__config_is_host_var(*e, len);
        if (!known) {
            char *name = sr__strndup(*e, len);
            const char *best = name ? sr__closest(name, cands, nc) : NULL;
            sr__diag_add(&run->cfg.diag,
                         "environment variable %s matches no key of this run%s%s%s: fix its name or "
                         "unset it",
                         name ? name : *e, best ? " (did you mean " : "", best ? best : "", best ? "?)" : "");
            free(name);
        }
        for (size_t i = 0; i < nc; i++) free((char *)cands[i]);
    }
}

/* FSDP_* and ACCELERATE_* variables: the names the loaded plugins write or read are used, the
   rest named (config/env_foreign.h). */
static void check_foreign_env(sr__run *run) {
    size_t n = 0;
    for (size_t i = 0; i < run->nplugins; i++) {
        for (const sr_key *k = run->plugins[i].p->keys; k && k->name; k++) n++;
        for (const sr_var *v = run->plugins[i].p->writes; v && v->name; v++) n++;
    }
    const char **used = sr__malloc((n ? n : 1) * sizeof *used);
    if (!used) {
        sr__diag_add(&run->cfg.diag, "out of memory checking the environment's FSDP_* and ACCELERATE_* variables");
        return;
    }
    n = 0;
    for (size_t i = 0; i < run->nplugins; i++) {
        for (const sr_key *k = run->plugins[i].p->keys; k && k->name; k++) used[n++] = k->env;
        for (const sr_var *v = run->plugins[i].p->writes; v && v->name; v++) used[n++] = v->name;
    }
    sr__env_foreign_check(used, n, &run->cfg.diag);
    free(used);
}

/* [shardrun] elastic_join = next_save waits for the job's next periodic checkpoint: a job that is not
   elastic has no joins, and one that never saves periodically (not a model task, no save_steps)
   would keep an arriving node waiting to the end. */
static void check_elastic_join(sr__run *run) {
    sr__job *cfg = &run->cfg;
    if (run->settings.elastic_join != SR__JOIN_NEXT_SAVE) return;
    const char *where = sr__config_get(cfg, "shardrun", "elastic_join")->where;
    const char *steps = sr__config_value(cfg, "task", "save_steps"),
               *strategy = sr__config_value(cfg, "task", "save_strategy");
    long long n = 0;
    if (steps && sr__parse_int(steps, &n) != 0) n = 0;
    /* the trainer's rule (trainer/train_args.c): save_strategy = steps saves every save_steps (500 when
       unset), epoch after every epoch, no never; without it, save_steps >= 1 decides */
    int periodic = strategy ? strcmp(strategy, "no") != 0 : n >= 1;
    if (!run->layout.elastic)
        sr__diag_add(&cfg->diag,
                     "%s: [shardrun] elastic_join = next_save applies to elastic jobs, and this one has a fixed "
                     "nnodes = %d: give nnodes as MIN:MAX (docs/elastic.md), or remove elastic_join",
                     where, run->layout.nnodes);
    else if (!run->model_task)
        sr__diag_add(&cfg->diag,
                     "%s: [shardrun] elastic_join = next_save takes a joining node in at the job's next periodic "
                     "checkpoint, which only a model task writes (task = %s is not one): use elastic_join = now",
                     where, sr__config_value(cfg, "shardrun", "task"));
    else if (!periodic)
        sr__diag_add(&cfg->diag,
                     "%s: [shardrun] elastic_join = next_save takes a joining node in at the job's next periodic "
                     "checkpoint, and this job never writes one ([task] %s = %s): set [task] save_steps = N (a "
                     "checkpoint every N steps), or use elastic_join = now",
                     where, strategy ? "save_strategy" : "save_steps",
                     strategy ? strategy
                     : steps  ? steps
                              : "0");
}

int sr__run_prepare(sr__run *run, const sr__run_args *args) {
    sr__job *cfg = &run->cfg;
    if (sr__config_load(cfg, args->job) != 0 || cfg->diag.n) goto fail;

    sr__config_resolve(cfg, "shardrun", sr__shardrun_keys, NULL, NULL);
    sr__log_level = (int)sr__shardrun_log_level(cfg);
    load_plugins(run);
    if (cfg->diag.n) goto fail;
    for (size_t i = 0; i < run->nplugins; i++)
        sr__config_resolve(cfg, run->plugins[i].name, run->plugins[i].p->keys, &sr__plugin_host_keys[0],
                           run->plugins[i].p->normalize_key);
    sr__config_resolve_free(cfg, "task");
    const char *known[258] = {"shardrun", "task"};
    size_t nknown = 2;
    for (size_t i = 0; i < run->nplugins && nknown < 258; i++) known[nknown++] = run->plugins[i].name;
    sr__config_check_leftovers(cfg, known, nknown);
    if (cfg->diag.n) goto fail;

    sr__layout_resolve(cfg, &run->layout);
    sr__shardrun_settings_read(cfg, &run->settings); /* the durations' ranges, typed once */
    run->layout.max_restarts = run->settings.max_restarts;
    sr__task_spec_resolve(cfg, args->nextra, args->extra, &run->task);
    if (cfg->diag.n) goto fail;
    run->model_task = run->task.type == SR__TASK_SO && run->task.kind == SR_TASK_MODEL;
    if (run->task.type == SR__TASK_SO && run->task.kind == SR_TASK_MODEL && sr__task_spec_check_trainer_keys(cfg) != 0)
        goto fail;
    check_elastic_join(run);
    if (cfg->diag.n) goto fail;
    if (sr__run_validate_plugins(run) != 0) goto fail;
    for (int i = 0; i < run->layout.spawn_count; i++) {
        sr__env_block b = {0};
        sr__run_build_env(run, run->layout.first_local + i, &b, &cfg->diag);
        sr__env_block_free(&b);
        if (cfg->diag.n) goto fail;
    }
    check_stray_env(run);
    check_foreign_env(run);
    if (cfg->diag.n) goto fail;
    return 0;
fail:
    sr__diag_flush(&cfg->diag);
    return -1;
}

void sr__run_free(sr__run *run) {
    for (size_t i = 0; i < run->nplugins; i++) sr__plugin_unload(&run->plugins[i]);
    free(run->plugins);
    sr__layout_free(&run->layout);
    sr__task_spec_free(&run->task);
    sr__diag_flush(&run->cfg.diag); /* anything still unsaid */
    free(run->fingerprint);
    sr__config_free(&run->cfg);
    memset(run, 0, sizeof *run);
}

/* Variables the plugins write that differ from rank to rank (or node to node) by design. */
static int per_rank_variable(const char *name) {
    static const char *const names[] = {"RANK",      "LOCAL_RANK",      "GROUP_RANK", "NODE_RANK",
                                        "ROLE_RANK", "OMP_NUM_THREADS", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) return 1;
    return 0;
}

/* "<bytes> bytes, hash <hex>" of a file: two nodes running different builds of a task would run
   different code on the same collectives. */
static const char *file_digest(const char *path, char *out, size_t len) {
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(out, len, "unreadable"), out;
    sr__hash64_state h;
    sr__hash64_init(&h, 0);
    unsigned char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) sr__hash64_update(&h, buf, got);
    unsigned long long n = (unsigned long long)ftell(f);
    fclose(f);
    char hex[17];
    snprintf(out, len, "%llu bytes, hash %s", n, sr__hash64_hex(sr__hash64_final(&h), hex));
    return out;
}

/* What defines the run, as this agent sees it, one "name=value" line each (store/rdzv.h compares
   it across agents before any other agent starts a worker): the layout, the task and its
   arguments, the plugins, the environment its workers receive (minus what differs per rank by
   design) and every [task] key.  Two nodes started with different jobs would otherwise train on
   mixed-up collectives.  NULL when memory ran out (a fingerprint cut short would tell agents of
   different jobs apart by chance only). */
static char *run_fingerprint(sr__run *run) {
    const sr__layout *l = &run->layout;
    char digest[64];
    sr__buf b = {0};
    char host[256] = "?";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
    sr__buf_printf(&b, "#host=%s\n#node=%d\n", host, l->node_rank);
    if (l->elastic)
        sr__buf_printf(&b, "nnodes=%d:%d\nnproc_per_node=%d\nelastic_join=%s\n", l->nnodes_min, l->nnodes_max,
                       l->nproc_per_node, run->settings.elastic_join == SR__JOIN_NEXT_SAVE ? "next_save" : "now");
    else sr__buf_printf(&b, "nnodes=%d\nnproc_per_node=%d\n", l->nnodes, l->nproc_per_node);
    const char *slash = strrchr(run->task.path ? run->task.path : "", '/');
    if (run->task.type == SR__TASK_EXEC) sr__buf_printf(&b, "task=exec:%s\n", slash ? slash + 1 : run->task.path);
    else
        sr__buf_printf(&b, "task=%s (kind %u)\ntask_file=%s\n", slash ? slash + 1 : run->task.path, run->task.kind,
                       file_digest(run->task.path, digest, sizeof digest));
    sr__buf_add(&b, "task_args=", 10);
    for (int i = 1; i < run->task.argc; i++) sr__buf_printf(&b, "%s%s", i > 1 ? " " : "", run->task.argv[i]);
    sr__buf_add(&b, "\nplugins=", 9);
    for (size_t i = 0; i < run->nplugins; i++) sr__buf_printf(&b, "%s%s", i ? "," : "", run->plugins[i].name);
    sr__buf_add(&b, "\n", 1);
    sr__env_block block = {0};
    sr__diag diag = {0};
    if (sr__run_build_env(run, l->first_local, &block, &diag) == 0)
        for (size_t i = 0; i < block.n; i++)
            if (!per_rank_variable(block.v[i].name))
                sr__buf_printf(&b, "env %s=%s\n", block.v[i].name, block.v[i].value ? block.v[i].value : "(unset)");
    sr__env_block_free(&block);
    sr__diag_clear(&diag); /* the same environment was built and checked by sr__run_prepare */
    for (size_t i = 0; i < run->cfg.nset; i++) {
        const sr__setting *s = &run->cfg.set[i];
        if (!strcmp(s->section, "task") && s->value) sr__buf_printf(&b, "[task] %s=%s\n", s->key, s->value);
    }
    if (b.oom) {
        sr__buf_free(&b);
        return NULL;
    }
    return b.s ? b.s : sr__strdup("");
}

void sr__run_apply_world(sr__run *run) {
    if (!run->layout.elastic || !run->rdzv.enabled) return;
    run->layout.nnodes = run->rdzv.world_nodes;
    run->layout.node_rank = run->rdzv.world_rank;
    /* etcd: MASTER_ADDR is the leader's address, which may change with every attempt */
    char *leader =
        run->rdzv.etcd && strcmp(run->rdzv.host, run->layout.master_addr) ? sr__strdup(run->rdzv.host) : NULL;
    if (leader) {
        free(run->layout.master_addr);
        run->layout.master_addr = leader;
    }
}

/* rdzv_backend = etcd: the job's name in etcd: run_id, or with none a digest of what defines the job
   (the fingerprint without the lines that describe one agent), the same on every node. */
static void name_etcd_job(sr__run *run) {
    if (strcmp(run->layout.run_id, "none")) {
        snprintf(run->etcd_job, sizeof run->etcd_job, "%s", run->layout.run_id);
        return;
    }
    char hex[17];
    snprintf(run->etcd_job, sizeof run->etcd_job, "job-%s", sr__fingerprint_digest(run->fingerprint, 0x65746364u, hex));
}

int sr__run_prepare_rdzv(sr__run *run) {
    const sr__layout *l = &run->layout;
    const sr__setting *port = sr__config_get(&run->cfg, "shardrun", "rdzv_port");
    int nagents = l->nnodes * l->nproc_per_node / l->spawn_count; /* elastic: MAX */
    sr__rdzv_args a = {
        .nagents = nagents,
        .agent_id = l->elastic ? (l->elastic_host ? 0 : -1)
                               : (l->node_rank * l->nproc_per_node + l->first_local) / l->spawn_count,
        .elastic = l->elastic,
        .min_agents = l->nnodes_min,
        .last_call_s = run->settings.rdzv_last_call,
        .join_at_save = run->settings.elastic_join == SR__JOIN_NEXT_SAVE,
        .preempt_grace_s = run->settings.preempt_grace,
        .need_store = !(nagents == 1 && run->task.type == SR__TASK_EXEC),
        .master_addr = l->master_addr,
        .master_port = l->master_port,
        .port_value = port->value,
        .port_where = port->where,
        .timeout_s = run->settings.rdzv_timeout,
        /* other agents read the verdict, stop their workers (shutdown_grace) and report */
        .ack_timeout_s = run->settings.shutdown_grace + 5.0,
        .per_process = l->per_process,
        .launcher_job_id = l->launcher_job_id,
        .max_restarts = l->max_restarts,
        .restart_delay_s = run->settings.restart_delay,
        .fingerprint = run->fingerprint = run_fingerprint(run),
    };
    if (!a.fingerprint) {
        sr__diag_add(&run->cfg.diag, "out of memory for the run's fingerprint (what every agent of the run compares)");
        return -1;
    }
    if (l->etcd_endpoints) {
        name_etcd_job(run);
        a.etcd_endpoints = l->etcd_endpoints;
        a.etcd_job = run->etcd_job;
        sr__log(SR_LOG_INFO,
                "elastic job (nnodes = %d:%d) meeting in etcd at %s as %s: waiting up to %gs (rdzv_timeout) for at "
                "least %d node%s, then %gs (rdzv_last_call) for more",
                l->nnodes_min, l->nnodes_max, l->etcd_endpoints, run->etcd_job, a.timeout_s, l->nnodes_min,
                l->nnodes_min == 1 ? "" : "s", a.last_call_s);
    } else if (a.need_store && nagents > 1 && a.agent_id != 0) /* what a node waits for, before it waits */
        sr__log(SR_LOG_INFO,
                "waiting up to %gs ([shardrun] rdzv_timeout) for node 0's shardrun at %s (master_addr) to answer",
                a.timeout_s, a.master_addr);
    if (l->elastic && l->elastic_host && nagents > 1)
        sr__log(SR_LOG_INFO,
                "elastic job (nnodes = %d:%d): waiting up to %gs (rdzv_timeout) for at least %d node%s, then %gs "
                "(rdzv_last_call) for more",
                l->nnodes_min, l->nnodes_max, a.timeout_s, l->nnodes_min, l->nnodes_min == 1 ? "" : "s", a.last_call_s);
    run->rdzv_args = a;
    int rc = sr__rdzv_prepare(&run->rdzv, &a, &run->cfg.diag);
    if (rc == SR__RDZV_ENDED) {
        sr__log(SR_LOG_INFO, "%s", run->rdzv.failed_elsewhere);
        sr__rdzv_free(&run->rdzv);
        return rc;
    }
    if (rc != 0) {
        sr__rdzv_free(&run->rdzv); /* connections made before the refusal */
        return rc == SR__RDZV_UNREACHABLE ? SR__RDZV_UNREACHABLE : -1;
    }
    sr__run_apply_world(run);
    if (run->rdzv.server)
        sr__log(SR_LOG_DEBUG, "rendezvous store listening on %s:%d", nagents == 1 ? "127.0.0.1" : "0.0.0.0",
                run->rdzv.port);
    return 0;
}
