#define _GNU_SOURCE
#include "run/layout.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/rand.h"

#include "config/cluster.h"
#include "config/enums.h"
#include "config/value.h"
#include "etcd/etcd.h"

int sr__free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY), .sin_port = 0};
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static void uuid4(char out[37]) {
    unsigned char b[16];
    sr__random_bytes(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static int int_of(sr__job *cfg, const char *key) {
    const char *v = sr__config_value(cfg, "shardrun", key);
    return v ? atoi(v) : 0;
}

/* Replaces a setting's value, recording where the new value came from. */
static void put(sr__job *cfg, const char *key, const char *value, sr__from from, const char *where) {
    sr__setting *s = sr__config_get(cfg, "shardrun", key);
    free(s->value), free(s->where);
    s->value = sr__strdup(value);
    s->from = from;
    s->where = sr__strdup(where);
    if (!s->value || !s->where) sr__diag_add(&cfg->diag, "out of memory for the setting [shardrun] %s", key);
}

static void put_int(sr__job *cfg, const char *key, int v, sr__from from, const char *where) {
    char buf[32];
    snprintf(buf, sizeof buf, "%d", v);
    put(cfg, key, buf, from, where);
}

static int is_default(sr__job *cfg, const char *key) {
    return sr__config_get(cfg, "shardrun", key)->from == SR__FROM_DEFAULT;
}

static void apply_cluster(sr__job *cfg, sr__layout *out) {
    sr__cluster c;
    sr__cluster_detect(&c, (const char *(*)(const char *))getenv);
    /* a launcher's variables are read whatever the flags say, so a bad one is an error even
       where a flag would have won: it means the launch is not what it seems */
    if (c.error[0] && c.source) {
        sr__diag_add(&cfg->diag,
                     "%s launcher detected, but %s; fix the launcher's variables, or start shardrun "
                     "without them and give the topology with --nnodes/--node-rank/--nproc-per-node",
                     c.launcher, c.error);
        return;
    }
    if (c.error[0]) {
        sr__diag_add(&cfg->diag, "%s; fix or unset that variable", c.error);
        return;
    }
    if (!c.source) {
        /* a process of a launcher that sets only some of them (RANK and WORLD_SIZE, say) would
           otherwise run the job file's whole world on its own, once per process */
        if (c.partial[0] && is_default(cfg, "nnodes") && is_default(cfg, "node_rank"))
            sr__diag_add(&cfg->diag,
                         "%s: a torchrun-style launcher sets RANK, WORLD_SIZE and LOCAL_RANK together "
                         "for each worker, so shardrun cannot tell this process's place; set the missing ones, or "
                         "give the topology with --nnodes and --node-rank (then these are not read), or unset them",
                         c.partial);
        return;
    }
    out->cluster_source = c.source;
    char where[64];
    snprintf(where, sizeof where, "cluster (%s)", c.source);
    sr__setting *np = sr__config_get(cfg, "shardrun", "nproc_per_node");
    int nproc_given = np->from != SR__FROM_DEFAULT, nproc = atoi(np->value);
    /* One process per node with nproc_per_node given is node mode (srun --ntasks-per-node=1,
       mpirun --map-by ppr:1:node): this agent starts the job file's workers.  Any other launch
       that started this process as one rank is per-process mode, and the launcher's layout wins
       over the job file: otherwise every process would start a whole run of its own. */
    int per_process = c.per_process && (c.local_world_size > 1 || !nproc_given || nproc == 1);
    if (per_process && nproc_given && nproc != c.local_world_size) {
        if (np->from == SR__FROM_CLI)
            sr__diag_add(&cfg->diag,
                         "%s: --nproc-per-node %d disagrees with %s, which started this process as rank "
                         "%d of %d, %d per node (%s); drop --nproc-per-node under a launcher that starts one process "
                         "per rank, or start one process per node",
                         np->where, nproc, c.launcher, c.rank, c.world_size, c.local_world_size, c.vars);
        else if (c.rank == 0)
            sr__log(SR_LOG_INFO,
                    "%s started this process as rank %d of %d, %d per node (%s): each process runs "
                    "one worker; nproc_per_node = %d (%s) is overridden",
                    c.launcher, c.rank, c.world_size, c.local_world_size, c.vars, nproc, np->where);
    }
    if (is_default(cfg, "nnodes")) put_int(cfg, "nnodes", c.nnodes, SR__FROM_CLUSTER, where);
    if (is_default(cfg, "node_rank")) put_int(cfg, "node_rank", c.node_rank, SR__FROM_CLUSTER, where);
    if (c.master_addr[0] && is_default(cfg, "master_addr"))
        put(cfg, "master_addr", c.master_addr, SR__FROM_CLUSTER, where);
    if (c.master_port && is_default(cfg, "master_port"))
        put_int(cfg, "master_port", c.master_port, SR__FROM_CLUSTER, where);
    /* several hosts and no address to meet at: every rank would dial its own loopback */
    if (c.nnodes > 1 && !c.master_addr[0] && is_default(cfg, "master_addr"))
        sr__diag_add(&cfg->diag,
                     "%s started shardrun on %d hosts, but says nothing of where rank 0 is: set "
                     "[shardrun] master_addr (or --master-addr) to rank 0's host, the same for every process",
                     c.launcher, c.nnodes);
    snprintf(out->launcher_job_id, sizeof out->launcher_job_id, "%s", c.job_id);
    out->launcher = c.launcher;
    if (per_process) {
        /* the launcher started this process as one worker: start exactly that one */
        if (np->from != SR__FROM_CLI) put_int(cfg, "nproc_per_node", c.local_world_size, SR__FROM_CLUSTER, where);
        out->per_process = 1;
        if (c.rank != c.node_rank * c.local_world_size + c.local_rank || c.world_size != c.nnodes * c.local_world_size)
            sr__diag_add(&cfg->diag,
                         "%s launcher: rank %d of %d with local rank %d of %d on node %d of %d is not "
                         "a homogeneous layout (rank = node_rank * nproc_per_node + local_rank); shardrun needs the "
                         "same number of workers on every node",
                         c.source, c.rank, c.world_size, c.local_rank, c.local_world_size, c.node_rank, c.nnodes);
        out->first_local = c.local_rank;
        out->spawn_count = 1;
    }
}

/* rdzv_backend = etcd: 1, with out->etcd_endpoints checked (the list's form only: no member is
   asked yet); 0 with the built-in store. */
static int resolve_etcd(sr__job *cfg, sr__layout *out, const sr__setting *standalone) {
    const sr__setting *be = sr__config_get(cfg, "shardrun", "rdzv_backend");
    const sr__setting *ep = sr__config_get(cfg, "shardrun", "rdzv_endpoint");
    if (sr__enum_index(SR__RDZV_BACKEND_CHOICES, 0, be->value ? be->value : "") != SR__RDZV_ETCD) {
        if (ep->value && *ep->value)
            sr__diag_add(&cfg->diag,
                         "%s: rdzv_endpoint = %s, but rdzv_backend is %s (%s): the built-in store lives on node 0 "
                         "(master_addr); set rdzv_backend = etcd to meet in etcd, or drop rdzv_endpoint",
                         ep->where, ep->value, be->value ? be->value : "builtin", be->where);
        return 0;
    }
    if (!ep->value || !*ep->value) {
        sr__diag_add(&cfg->diag,
                     "%s: rdzv_backend = etcd needs rdzv_endpoint = host:port[,host:port...], the client addresses "
                     "of the etcd members (etcd's --advertise-client-urls; 2379 by default), the same on every node",
                     be->where);
        return 1;
    }
    char err[600];
    sr__etcd *c = sr__etcd_open(ep->value, NULL, err, sizeof err);
    if (!c) sr__diag_add(&cfg->diag, "%s: rdzv_endpoint = %s: %s", ep->where, ep->value, err);
    sr__etcd_close(c);
    if (standalone)
        sr__diag_add(&cfg->diag,
                     "%s: standalone runs on one node with no rendezvous to share; drop rdzv_backend = %s (%s)",
                     standalone->where, be->value, be->where);
    out->etcd_endpoints = sr__strdup(ep->value);
    if (!out->etcd_endpoints) sr__diag_add(&cfg->diag, "out of memory for rdzv_endpoint");
    return 1;
}

/* nnodes = MIN:MAX: an elastic job (docs/elastic.md).  Until the rendezvous forms the first world,
   nnodes is MAX (the workers' environment is checked for the largest world).  standalone: its
   setting, NULL when the run is not standalone. */
static void resolve_elastic(sr__job *cfg, sr__layout *out, const sr__setting *standalone) {
    const sr__setting *nn = sr__config_get(cfg, "shardrun", "nnodes");
    const char *colon = nn->value ? strchr(nn->value, ':') : NULL;
    int etcd = resolve_etcd(cfg, out, standalone);
    if (!colon && !etcd) return;
    out->elastic = 1;
    out->nnodes_min = atoi(nn->value);
    out->nnodes_max = colon ? atoi(colon + 1) : out->nnodes_min;
    out->nnodes = out->nnodes_max;
    out->elastic_host = out->node_rank == 0 && !etcd; /* with etcd, an election decides */
    out->node_rank = 0;
    if (out->per_process)
        sr__diag_add(&cfg->diag,
                     "%s: nnodes = %s (an elastic job) needs one shardrun per node, but %s started this process as "
                     "one rank; start one process per node (srun --ntasks-per-node=1, mpirun --map-by ppr:1:node) "
                     "with nproc_per_node set, or give a fixed nnodes",
                     nn->where, nn->value, out->launcher ? out->launcher : "a launcher");
    if (standalone && out->nnodes_max > 1)
        sr__diag_add(&cfg->diag,
                     "%s: standalone runs on one node, but nnodes = %s (%s) allows up to %d nodes; drop one of them "
                     "(or give nnodes = 1:1)",
                     standalone->where, nn->value, nn->where, out->nnodes_max);
}

void sr__layout_resolve(sr__job *cfg, sr__layout *out) {
    memset(out, 0, sizeof *out);
    out->spawn_count = -1;
    sr__setting *standalone = sr__config_get(cfg, "shardrun", "standalone");
    int is_standalone = standalone->value && !strcmp(standalone->value, "true");
    if (!is_standalone) apply_cluster(cfg, out);
    if (is_standalone) {
        if (int_of(cfg, "nnodes") != 1 && !strchr(sr__config_value(cfg, "shardrun", "nnodes"), ':'))
            sr__diag_add(&cfg->diag, "%s: standalone runs on one node, but nnodes is %d (%s); drop one of them",
                         standalone->where, int_of(cfg, "nnodes"), sr__config_get(cfg, "shardrun", "nnodes")->where);
        /* what standalone means anyway (master_port = 0, a loopback address) is not a conflict */
        const char *ma = sr__config_value(cfg, "shardrun", "master_addr");
        int addr_ok = is_default(cfg, "master_addr") || !strcmp(ma, "localhost") || !strncmp(ma, "127.", 4);
        int port_ok = is_default(cfg, "master_port") || int_of(cfg, "master_port") == 0;
        if (!addr_ok || !port_ok)
            sr__diag_add(&cfg->diag,
                         "%s: standalone picks its own master address and port; drop master_addr/"
                         "master_port (or standalone)",
                         standalone->where);
        put(cfg, "master_addr", "localhost", SR__FROM_DEFAULT, "standalone");
        put(cfg, "master_port", "0", SR__FROM_DEFAULT, "standalone");
        if (is_default(cfg, "run_id")) {
            char id[37];
            uuid4(id);
            put(cfg, "run_id", id, SR__FROM_DEFAULT, "standalone (a fresh id per run)");
        }
    }
    out->nproc_per_node = int_of(cfg, "nproc_per_node");
    out->nnodes = int_of(cfg, "nnodes");
    out->node_rank = int_of(cfg, "node_rank");
    resolve_elastic(cfg, out, is_standalone ? standalone : NULL);
    if (!out->elastic && out->node_rank >= out->nnodes)
        sr__diag_add(&cfg->diag, "node_rank %d (%s) must be below nnodes %d (%s)", out->node_rank,
                     sr__config_get(cfg, "shardrun", "node_rank")->where, out->nnodes,
                     sr__config_get(cfg, "shardrun", "nnodes")->where);
    if (int_of(cfg, "master_port") == 0) {
        sr__setting *mp = sr__config_get(cfg, "shardrun", "master_port");
        int agents = out->per_process ? out->nnodes * out->nproc_per_node : out->nnodes;
        if (out->per_process && agents > 1 && out->launcher_job_id[0]) {
            /* every process of the launch computes the same port from the job id it shares; an
               even port, so that the store's master_port + 1 stays in range */
            int port = 10000 + 2 * (int)(sr__hash_str(out->launcher_job_id) % 10000);
            char where[700];
            snprintf(where, sizeof where, "%s (0: derived from %s's job id %s)", mp->where, out->launcher,
                     out->launcher_job_id);
            put_int(cfg, "master_port", port, mp->from, where);
        } else if (out->per_process && agents > 1) {
            sr__diag_add(&cfg->diag,
                         "%s: master_port = 0 (a free port) cannot work under %s: each of its %d processes "
                         "would pick its own port, and %s exposes no job id to derive a common one from; set "
                         "master_port to a free port (e.g. --set shardrun.master_port=29500), the same for every "
                         "process",
                         mp->where, out->launcher, agents, out->launcher);
        } else if (out->nnodes > 1 && !is_standalone) {
            /* an elastic job's nnodes is its MAX here; standalone's own 0 with nnodes > 1 was refused
               above, and its port is no choice of the user's */
            sr__diag_add(&cfg->diag,
                         "%s: master_port = 0 (pick a free port) only works on one node: the other "
                         "nodes could not know the port; give a fixed port",
                         mp->where);
        } else {
            int port = sr__free_port();
            if (port < 0) sr__diag_add(&cfg->diag, "cannot find a free TCP port on this host");
            char where[600];
            snprintf(where, sizeof where, "%s (0 = a free port)", mp->where);
            put_int(cfg, "master_port", port, mp->from, where);
        }
    }
    out->master_addr = sr__strdup(sr__config_value(cfg, "shardrun", "master_addr"));
    out->master_port = int_of(cfg, "master_port");
    out->run_id = sr__strdup(sr__config_value(cfg, "shardrun", "run_id"));
    if (!out->master_addr || !out->run_id) sr__diag_add(&cfg->diag, "out of memory for master_addr and run_id");
    if (out->spawn_count < 0) {
        out->first_local = 0;
        out->spawn_count = out->nproc_per_node;
    }
}

void sr__layout_topology(const sr__layout *l, int local_rank, sr_topology *t) {
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->local_rank = local_rank;
    t->local_world_size = l->nproc_per_node;
    t->node_rank = l->node_rank;
    t->nnodes = l->nnodes;
    t->world_size = l->nnodes * l->nproc_per_node;
    t->rank = local_rank < 0 ? -1 : l->node_rank * l->nproc_per_node + local_rank;
    t->master_addr = l->master_addr;
    t->master_port = l->master_port;
    t->run_id = l->run_id;
    t->restart_count = l->restart_count;
    t->max_restarts = l->max_restarts;
}

void sr__layout_free(sr__layout *l) {
    free(l->master_addr);
    free(l->run_id);
    free(l->etcd_endpoints);
    memset(l, 0, sizeof *l);
}
