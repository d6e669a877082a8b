/* The command line: `shardrun [run] JOB.ini`, `shardrun env`, `shardrun plugins`,
   `shardrun reference`, --help.  Parses flags into overrides, then hands over to the run. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardrun/main.h"
#include "shardrun/task.h"
#include "cli/catalog.h"
#include "cli/key_probe.h"
#include "agent/metrics.h"
#include "agent/run_lock.h"
#include "agent/run_status.h"
#include "agent/supervisor.h"
#include "base/log.h"
#include "config/env_table.h"
#include "config/value.h"
#include "run/run.h"

#define SR__VERSION "0.1.0"

int sr__cmd_env(sr__run *run, const sr__run_args *args, int rank, int explain);
int sr__cmd_selftest(int argc, char **argv); /* cli/selftest_cmd.c */
int sr__cmd_plot(int argc, char **argv);
int sr__cmd_prepare(int argc, char **argv); /* cli/cmd_prepare.c: runs shardrun_prepare */
int sr__cmd_merge(int argc, char **argv);   /* cli/cmd_prepare.c: runs shardrun_merge */
int sr__cmd_status(int argc, char **argv);  /* cli/cmd_status.c */

typedef struct cli {
    const char *command; /* "run", "env", "plugins", "reference" */
    const char *job;
    const char *results;
    int rank, explain, help, version;
    int nextra;
    char **extra;
} cli;

/* torchrun's flags, both spellings, and the [shardrun] key each sets. */
static const struct {
    const char *dash, *under, *key;
    int has_value;
} torchrun_flags[] = {
    {"--nproc-per-node", "--nproc_per_node", "nproc_per_node", 1},
    {"--nnodes", "--nnodes", "nnodes", 1},
    {"--node-rank", "--node_rank", "node_rank", 1},
    {"--master-addr", "--master_addr", "master_addr", 1},
    {"--master-port", "--master_port", "master_port", 1},
    {"--standalone", "--standalone", "standalone", 0},
    {"--rdzv-backend", "--rdzv_backend", "rdzv_backend", 1},
    {"--rdzv-endpoint", "--rdzv_endpoint", "rdzv_endpoint", 1},
    {"--rdzv-id", "--rdzv_id", "run_id", 1},
};

static void usage(FILE *out) {
    fprintf(out, "usage: shardrun [OPTIONS] JOB.ini [-- TASK ARGS...]   run the job\n"
                 "       shardrun env [OPTIONS] JOB.ini [--rank R] [--explain]\n"
                 "                                         print the variables rank R receives\n"
                 "                                         (default: the first rank this node starts)\n"
                 "       shardrun plugins                  list the plugins found and their keys\n"
                 "       shardrun reference                the key and variable reference (Markdown)\n"
                 "       shardrun selftest [--gpu] [--quick] [--nproc-per-node N] [--results FILE]\n"
                 "                                         check this machine's kernels, collectives and an\n"
                 "                                         FSDP step (no job file; selftest --help)\n"
                 "       shardrun prepare -o PREFIX [--job JOB.ini | --vocab F --merges F] INPUT...\n"
                 "                                         text or JSON Lines into llm.c token shards with the\n"
                 "                                         job's tokenizer, on every core (prepare --help)\n"
                 "       shardrun merge CHECKPOINT_DIR [-o OUT.safetensors] [--base BASE.safetensors]\n"
                 "                                         fold a FULL checkpoint's LoRA adapters into its base\n"
                 "                                         weights: a model.safetensors for LoRA-off runs\n"
                 "       shardrun status OUTPUT_DIR         a run's state, every rank's step, loss, speed and\n"
                 "                                         memory, and its ETA, from any host (status --help)\n"
                 "       shardrun plot OUTPUT_DIR [--compare OTHER_DIR ...] [-o FILE]\n"
                 "                                         the loss curves of runs (their trainer_state.json) as SVG\n"
                 "\n"
                 "options:\n"
                 "  --set SECTION.KEY=VALUE   override a job-file key (repeatable)\n"
                 "  --nproc-per-node N, --nnodes N, --node-rank K, --master-addr H, --master-port P,\n"
                 "  --standalone, --rdzv-backend B, --rdzv-endpoint E, --rdzv-id ID\n"
                 "                            as torchrun (underscore spellings accepted too)\n"
                 "  --results FILE            also write the per-rank results (JSON) to FILE\n"
                 "  -h, --help, --version\n"
                 "\n"
                 "precedence: command line > SHARDRUN_* or a key's final variable > job file > default\n"
                 "exit codes: 0 success, 1 a worker failed, 2 configuration error, 128+N stopped by signal N\n"
                 "  (SIGUSR1 counts as SIGTERM: 143, a model task's preemption)\n"
                 "\n[shardrun] keys (each also SHARDRUN_<KEY>):\n");
    sr__print_key_table(out, "shardrun", sr__shardrun_keys, 0, 0);
}

static const char *flag_value(int argc, char **argv, int *i, const char *flag) {
    const char *a = argv[*i];
    size_t fl = strlen(flag);
    if (a[fl] == '=') return a + fl + 1;
    if (*i + 1 >= argc) {
        sr__log(SR_LOG_ERROR, "%s needs a value (see shardrun --help)", flag);
        return NULL;
    }
    return argv[++*i];
}

static int flag_is(const char *arg, const char *flag) {
    size_t fl = strlen(flag);
    return !strncmp(arg, flag, fl) && (arg[fl] == 0 || arg[fl] == '=');
}

/* Edits between two short words, a swap of neighbours counting as one ("evn" is 1 from "env", 2
   from "run"); words longer than 31 characters are no command's misspelling. */
static size_t command_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b), d[32][32];
    if (la > 31 || lb > 31) return (size_t)-1;
    for (size_t i = 0; i <= la; i++)
        for (size_t j = 0; j <= lb; j++) {
            if (!i || !j) {
                d[i][j] = i + j;
                continue;
            }
            size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

/* A first word that is no file but a command misspelt ("evn"): the command it is close to (at most
   two edits, fewer than its length), or NULL. */
static const char *misspelt_command(const char *word) {
    static const char *const commands[] = {"run",  "env",     "plugins", "reference", "selftest",
                                           "plot", "prepare", "merge",   "status"};
    if (strchr(word, '/') || access(word, F_OK) == 0) return NULL;
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        size_t d = command_distance(word, commands[i]);
        if (d < best_d && d < strlen(word)) best = commands[i], best_d = d;
    }
    return best;
}

/* Returns 0, or 2 on a usage error (message printed). */
static int parse(int argc, char **argv, cli *c, sr__job *cfg) {
    c->command = "run";
    c->rank = -1; /* env: the first rank this agent would start */
    int i = 1;
    if (argc > 1 && (!strcmp(argv[1], "env") || !strcmp(argv[1], "plugins") || !strcmp(argv[1], "reference") ||
                     !strcmp(argv[1], "run")))
        c->command = argv[i++];
    for (; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--")) {
            c->extra = argv + i + 1;
            c->nextra = argc - i - 1;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            c->help = 1;
            continue;
        }
        if (!strcmp(a, "--version")) {
            c->version = 1;
            continue;
        }
        if (!strcmp(a, "--explain")) {
            c->explain = 1;
            continue;
        }
        if (flag_is(a, "--set")) {
            if (!(v = flag_value(argc, argv, &i, "--set"))) return SR__EXIT_CONFIG;
            if (sr__config_add_set(cfg, v) != 0) {
                sr__log(SR_LOG_ERROR,
                        "--set %s: expected SECTION.KEY=VALUE, e.g. "
                        "--set accelerate.fsdp.sharding_strategy=SHARD_GRAD_OP",
                        v);
                return SR__EXIT_CONFIG;
            }
            continue;
        }
        if (flag_is(a, "--results")) {
            if (!(c->results = flag_value(argc, argv, &i, "--results"))) return SR__EXIT_CONFIG;
            continue;
        }
        if (flag_is(a, "--rank")) {
            long long r;
            if (!(v = flag_value(argc, argv, &i, "--rank"))) return SR__EXIT_CONFIG;
            if (sr__parse_int(v, &r) != 0 || r < 0 || r > 1 << 30) {
                sr__log(SR_LOG_ERROR, "--rank %s: expected a rank >= 0", v);
                return SR__EXIT_CONFIG;
            }
            c->rank = (int)r;
            continue;
        }
        int matched = 0;
        for (size_t f = 0; f < sizeof torchrun_flags / sizeof *torchrun_flags && !matched; f++) {
            const char *name = flag_is(a, torchrun_flags[f].dash)    ? torchrun_flags[f].dash
                               : flag_is(a, torchrun_flags[f].under) ? torchrun_flags[f].under
                                                                     : NULL;
            if (!name) continue;
            matched = 1;
            if (torchrun_flags[f].has_value) {
                if (!(v = flag_value(argc, argv, &i, name))) return SR__EXIT_CONFIG;
            } else {
                v = a[strlen(name)] == '=' ? a + strlen(name) + 1 : "true";
            }
            sr__config_add_override(cfg, "shardrun", torchrun_flags[f].key, v, name);
        }
        if (matched) continue;
        if (a[0] == '-') {
            sr__log(SR_LOG_ERROR, "unknown option %s (see shardrun --help)", a);
            return SR__EXIT_CONFIG;
        }
        const char *cmd = !c->job && i == 1 ? misspelt_command(a) : NULL;
        if (cmd) {
            sr__log(SR_LOG_ERROR,
                    "unknown command %s; did you mean %s? (commands: run, env, plugins, reference, selftest, plot, "
                    "prepare, merge, status; "
                    "or give a job file: shardrun JOB.ini)",
                    a, cmd);
            return SR__EXIT_CONFIG;
        }
        if (c->job) {
            sr__log(SR_LOG_ERROR, "two job files given (%s and %s); task arguments go after --", c->job, a);
            return SR__EXIT_CONFIG;
        }
        c->job = a;
    }
    return 0;
}

/* SIGUSR1 is SIGTERM's request by another name (Slurm's --signal=USR1@120): until the supervisor
   takes the signals over (sr__launch) or the selftest catches SIGTERM, shardrun ends as SIGTERM
   would end it, exit 143, rather than by SIGUSR1's default action (138). */
static void usr1_as_term(int sig) {
    (void)sig;
    raise(SIGTERM);
}

/* [shardrun] metrics_port: listening before the rendezvous, so a port in use wastes nothing.  0, or
   -1 after saying why. */
static int start_metrics(sr__run *run) {
    int port = run->settings.metrics_port;
    char why[300];
    if (port <= 0 || sr__metrics_start(port, why, sizeof why) == 0) return 0;
    const sr__setting *s = sr__config_get(&run->cfg, "shardrun", "metrics_port");
    sr__log(SR_LOG_ERROR,
            "%s: metrics_port = %d: cannot serve the metrics there: %s; choose a free port (each shardrun on a host "
            "needs its own: --set shardrun.metrics_port=P or SHARDRUN_METRICS_PORT), or 0 for none; no worker "
            "was started",
            s && s->where ? s->where : "[shardrun]", port, why);
    return -1;
}

/* The executable's one entry point into the library (shardrun/main.h). */
int sr_main(int argc, char **argv) {
    signal(SIGUSR1, usr1_as_term);
    if (argc > 1 && !strcmp(argv[1], "selftest")) return sr__cmd_selftest(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "plot")) return sr__cmd_plot(argc - 1, argv + 1); /* no job file */
    if (argc > 1 && !strcmp(argv[1], "prepare")) return sr__cmd_prepare(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "merge")) return sr__cmd_merge(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "status")) return sr__cmd_status(argc - 1, argv + 1);
    cli c = {0};
    sr__run run = {0};
    int rc = parse(argc, argv, &c, &run.cfg);
    if (rc == 0 && c.help) {
        usage(stdout);
        rc = -1;
    }
    if (rc == 0 && c.version) {
        printf("shardrun %s (plugin ABI %u, task ABI %u)\n", SR__VERSION, SR_PLUGIN_ABI_VERSION, SR_TASK_ABI_VERSION);
        rc = -1;
    }
    if (rc == 0 && !strcmp(c.command, "plugins")) rc = sr__cmd_plugins(getenv("SHARDRUN_PLUGIN_PATH")) - 1;
    if (rc == 0 && !strcmp(c.command, "reference")) rc = sr__cmd_reference() - 1;
    if (rc == 0 && !c.job) {
        sr__log(SR_LOG_ERROR, "no job file given");
        usage(stderr);
        rc = SR__EXIT_CONFIG;
    }
    if (rc != 0) {
        sr__diag_flush(&run.cfg.diag);
        sr__config_free(&run.cfg);
        return rc < 0 ? 0 : rc;
    }
    sr__run_args args = {.job = c.job, .nextra = c.nextra, .extra = c.extra};
    sr__output_lock *lock = NULL;
    if (!strcmp(c.command, "env")) {
        rc = sr__cmd_env(&run, &args, c.rank, c.explain);
    } else if (sr__run_prepare(&run, &args) != 0) {
        rc = SR__EXIT_CONFIG;
    } else if (sr__probe_run_keys(&run) != 0) {
        rc = SR__EXIT_CONFIG; /* a misspelt model-task key: found before any rendezvous or worker */
    } else if (start_metrics(&run) != 0) {
        rc = SR__EXIT_CONFIG;
    } else if ((rc = sr__run_prepare_rdzv(&run)) != 0) {
        sr__diag_flush(&run.cfg.diag);
        rc = rc == SR__RDZV_ENDED         ? SR__EXIT_OK /* elastic: the job ended well before this node joined */
             : rc == SR__RDZV_UNREACHABLE ? SR__EXIT_FAILED
                                          : SR__EXIT_CONFIG;
    } else if ((rc = sr__run_lock_take(&run, &lock)) != 0) {
        sr__rdzv_free(&run.rdzv); /* another run holds output_dir: no worker starts */
    } else {
        rc = sr__launch(&run, c.results);
        sr__run_status_end(rc); /* before the lock goes: a status without its lock is stale */
        rc = sr__run_lock_release(lock, rc);
    }
    sr__metrics_stop();
    sr__run_free(&run);
    return rc;
}
