/* The host side of the plugin ABI: the sr_host_api table and the hooks' drivers. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "config/value.h"
#include "config/worker_settings.h"
#include "device/cuda_lib.h"
#include "pg/route.h"
#include "pg/world.h"
#include "run/run.h"

struct sr_host {
    sr__run *run;
    const sr__loaded_plugin *plugin;
    sr_topology topo;
    sr__env_block *block; /* NULL outside write_env */
    sr__diag *diag;
    int rejected;
};

static void api_log(sr_host *h, sr_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sr__vlog_as((int)level, h->plugin->name, fmt, ap);
    va_end(ap);
}

static const char *api_get(sr_host *h, const char *key) { return sr__config_value(&h->run->cfg, h->plugin->name, key); }

static int api_given(sr_host *h, const char *key) {
    sr__setting *s = sr__config_get(&h->run->cfg, h->plugin->name, key);
    return s && s->from != SR__FROM_DEFAULT;
}

static void api_reject(sr_host *h, const char *key, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sr__setting *s = key ? sr__config_get(&h->run->cfg, h->plugin->name, key) : NULL;
    if (s) sr__diag_add(h->diag, "%s: [%s] %s: %s", s->where, h->plugin->name, key, msg);
    else sr__diag_add(h->diag, "%s: [%s]: %s", h->run->cfg.path, h->plugin->name, msg);
    h->rejected++;
}

static const sr_topology *api_topology(sr_host *h) { return &h->topo; }

/* Plugins read the environment through the host API: in the agent, while their write_env resolves
   the job, the block being written, else the user's environment (which is what the job is resolved
   from); in a worker, the environment the agent built.  A plugin's own reading, not shardrun's. */
static const char *api_env_get(sr_host *h, const char *name) {
    const sr__env_entry *e = h->block ? sr__env_block_find(h->block, name) : NULL;
    return e ? e->value : getenv(name);
}

/* "fsdp.version" or "shardrun.nnodes" -> "[accelerate] fsdp.version = 1 (job.ini:4)"; anything
   else is kept as written.  `because` may list several, separated by commas. */
static char *explain(sr_host *h, const char *because) {
    char *out = sr__strdup("");
    const char *p = because ? because : "";
    while (*p && out) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *item = sr__strndup(p, len);
        if (!item) {
            free(out);
            return NULL;
        }
        const char *dot = strchr(item, '.');
        sr__setting *s = sr__config_get(&h->run->cfg, h->plugin->name, item);
        if (!s && dot) {
            char *sec = sr__strndup(item, (size_t)(dot - item));
            s = sec ? sr__config_get(&h->run->cfg, sec, dot + 1) : NULL;
            free(sec);
        }
        char *piece = s ? sr__fmt("%s[%s] %s = %s (%s)", *out ? "; " : "", s->section, s->key,
                                  s->value ? s->value : "unset", s->where)
                        : sr__fmt("%s%s", *out ? "; " : "", item);
        char *joined = piece ? sr__fmt("%s%s", out, piece) : NULL;
        free(out), out = joined; /* NULL: out of memory */
        free(piece);
        free(item);
        p = comma ? comma + 1 : p + len;
    }
    return out;
}

static int api_env_set(sr_host *h, const char *name, const char *value, const char *because) {
    if (!h->block) {
        api_log(h, SR_LOG_ERROR, "env_set(%s) outside write_env is ignored", name ? name : "(null)");
        return -1;
    }
    if (!sr__valid_env_name(name) || !value || !*value) {
        sr__diag_add(h->diag, "plugin \"%s\" tried to set %s=\"%s\": %s", h->plugin->name, name ? name : "(null)",
                     value ? value : "(null)",
                     !sr__valid_env_name(name) ? "not a valid variable name" : "empty values are not allowed");
        return -1;
    }
    const sr__env_entry *prev = sr__env_block_find(h->block, name);
    if (prev && prev->setter && strcmp(prev->setter, h->plugin->name))
        sr__log(SR_LOG_DEBUG, "%s overrides %s=%s set by %s", h->plugin->name, name, prev->value ? prev->value : "",
                prev->setter);
    char *why = explain(h, because);
    int rc = why ? sr__env_block_set(h->block, name, value, h->plugin->name, why) : -1;
    if (rc != 0) sr__diag_add(h->diag, "plugin \"%s\": out of memory setting %s", h->plugin->name, name);
    free(why);
    return rc;
}

static int api_env_unset(sr_host *h, const char *name, const char *because) {
    if (!h->block || !sr__valid_env_name(name)) return -1;
    char *why = explain(h, because);
    int rc = why ? sr__env_block_set(h->block, name, NULL, h->plugin->name, why) : -1;
    if (rc != 0) sr__diag_add(h->diag, "plugin \"%s\": out of memory unsetting %s", h->plugin->name, name);
    free(why);
    return rc;
}

static const char *api_task_kind(sr_host *h) { return h->run->task.type == SR__TASK_EXEC ? "exec" : "main"; }

/* auto: nccl only when a CUDA device is visible; a CPU machine never loads CUDA to find out. */
static const char *resolve_backend(const char *backend) {
    if (strcmp(backend, "auto")) return backend;
    const char *vis = sr__worker_settings_get()->cuda_visible_devices;
    if (access("/dev/nvidiactl", F_OK) != 0 || (vis && (!*vis || !strcmp(vis, "-1")))) return "gloo";
    char err[4500];
    return sr__cuda_device_count(err, sizeof err) > 0 ? "nccl" : "gloo";
}

static int is_loopback(const char *addr) {
    return !strncmp(addr, "127.", 4) || !strcmp(addr, "localhost") || !strcmp(addr, "::1");
}

static int api_init_process_group(sr_host *h, const char *backend, double timeout_s) {
    sr__run *run = h->run;
    if (!run->rdzv.enabled) {
        api_log(h, SR_LOG_ERROR, "no rendezvous store in this run (exec: tasks form their own groups)");
        return -1;
    }
    /* where Gloo listens and what it advertises: loopback when the job stays on this host; else the
       address of the interface that reaches master_addr (GLOO_SOCKET_IFNAME wins when set), never
       the host name, which may resolve to a loopback address another node cannot reach */
    char hostname[256] = "127.0.0.1";
    const sr__worker_settings *ws = sr__worker_settings_get();
    const char *ifenv = ws->gloo_iface;
    if (!is_loopback(run->layout.master_addr) && !(ifenv && *ifenv)) {
        char ifname[64], master[256], why[600];
        if (sr__pg_route_to(run->layout.master_addr, h->topo.master_port, hostname, sizeof hostname, ifname,
                            sizeof ifname, master, sizeof master, why, sizeof why) != 0) {
            sr__log(SR_LOG_ERROR,
                    "process group world: which interface reaches the other nodes? %s ([shardrun] master_addr); "
                    "set GLOO_SOCKET_IFNAME to the interface the nodes reach each other on (`ip -br addr` lists them)",
                    why);
            return -1;
        }
        if (h->topo.nnodes > 1 && sr__pg_is_loopback_addr(hostname)) {
            sr__log(SR_LOG_ERROR,
                    "process group world: [shardrun] master_addr %s (%s) is reached from this host over the loopback "
                    "address %s, which the other %d node%s cannot reach; set master_addr to an address of node 0 that "
                    "every node "
                    "reaches (not a name /etc/hosts maps to 127.x), or GLOO_SOCKET_IFNAME to the interface the nodes "
                    "reach each other on (every node on this one host: master_addr = 127.0.0.1)",
                    run->layout.master_addr, master, hostname, h->topo.nnodes - 1, h->topo.nnodes == 2 ? "" : "s");
            return -1;
        }
        sr__log(SR_LOG_DEBUG, "gloo listens on %s (interface %s): the route to master_addr %s", hostname,
                ifname[0] ? ifname : "?", run->layout.master_addr);
    }
    sr__pg_world_args a = {
        run->rdzv.host,          run->rdzv.port,           run->rdzv.token, h->topo.rank, h->topo.world_size,
        h->topo.local_rank,      resolve_backend(backend), hostname,        timeout_s,    run->layout.restart_count,
        api_get(h, "transport"), ws->gloo_iface,           ws->host_id,     ws->pg_fault};
    char err[2048];
    if (!sr__pg_create_world(&a, err, sizeof err)) {
        sr__log(SR_LOG_ERROR, "%s", err);
        return -1;
    }
    sr__log(SR_LOG_DEBUG, "process group world ready: rank %d of %d, %s over %s", a.rank, a.size, a.backend,
            sr_pg_transport(sr__pg_world()));
    return 0;
}

static const sr_host_api host_api = {
    SR_PLUGIN_ABI_VERSION, sizeof(sr_host_api), api_log,     api_get,       api_given,     api_reject,
    api_topology,          api_env_get,         api_env_set, api_env_unset, api_task_kind, api_init_process_group,
};

static void host_for(sr_host *h, sr__run *run, size_t i, int local_rank, sr__env_block *block, sr__diag *diag) {
    memset(h, 0, sizeof *h);
    h->run = run;
    h->plugin = &run->plugins[i];
    h->block = block;
    h->diag = diag;
    sr__layout_topology(&run->layout, local_rank, &h->topo);
}

int sr__run_validate_plugins(sr__run *run) {
    int bad = 0;
    for (size_t i = 0; i < run->nplugins; i++) {
        sr_host h;
        host_for(&h, run, i, -1, NULL, &run->cfg.diag);
        if (!run->plugins[i].p->validate) continue;
        int rc = run->plugins[i].p->validate(&host_api, &h);
        if (rc != 0 && h.rejected == 0)
            sr__diag_add(&run->cfg.diag, "plugin \"%s\" rejected the configuration (validate returned %d)",
                         run->plugins[i].name, rc);
        bad |= rc != 0 || h.rejected;
    }
    return bad ? -1 : 0;
}

int sr__run_build_env(sr__run *run, int local_rank, sr__env_block *block, sr__diag *diag) {
    size_t before = diag->n;
    for (size_t i = 0; i < run->nplugins; i++) {
        sr_host h;
        host_for(&h, run, i, local_rank, block, diag);
        if (!run->plugins[i].p->write_env) continue;
        int rc = run->plugins[i].p->write_env(&host_api, &h);
        if (rc != 0 && diag->n == before)
            sr__diag_add(diag, "plugin \"%s\" failed to write the environment of local rank %d (returned %d)",
                         run->plugins[i].name, local_rank, rc);
    }
    return diag->n == before ? 0 : -1;
}

int sr__run_plugins_init(sr__run *run, int local_rank) {
    for (size_t i = 0; i < run->nplugins; i++) {
        sr_host h;
        sr__diag diag = {0};
        host_for(&h, run, i, local_rank, NULL, &diag);
        if (!run->plugins[i].p->init) continue;
        int rc = run->plugins[i].p->init(&host_api, &h);
        if (rc != 0 || diag.n) {
            if (!diag.n)
                sr__diag_add(&diag, "plugin \"%s\" failed to initialise (returned %d)", run->plugins[i].name, rc);
            sr__diag_flush(&diag);
            return -1;
        }
    }
    return 0;
}

void sr__run_plugins_finish(sr__run *run, int local_rank, int status) {
    for (size_t i = run->nplugins; i-- > 0;) {
        sr_host h;
        sr__diag diag = {0};
        host_for(&h, run, i, local_rank, NULL, &diag);
        if (run->plugins[i].p->finish) run->plugins[i].p->finish(&host_api, &h, status);
        sr__diag_flush(&diag);
    }
}
