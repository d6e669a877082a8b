/* `shardrun selftest` (see selftest.h): flags, the halves, merging, the table, the verdict. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/selftest.h"
#include "cli/selftest_fsdp.h"
#include "cli/selftest_lines.h"
#include "cli/selftest_subrun.h"
#include "base/alloc.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/out_file.h"
#include "base/strbuf.h"
#include "config/value.h"
#include "device/cuda_lib.h"

/* [torch] timeout of the selftest task's runs (seconds; see run_task) */
#define SELFTEST_COLLECTIVE_TIMEOUT_S 300

static void usage(FILE *out) {
    fprintf(out, "usage: shardrun selftest [--gpu] [--nproc-per-node N] [--quick] [--results FILE]\n"
                 "                         [--nnodes N --node-rank K --master-addr H --master-port P]\n"
                 "\n"
                 "Checks this machine with no job file: core's device table and the GPT-2 kernels against the\n"
                 "CPU, GEMMs against cblas_sgemm, every collective x dtype x op of the process group and its bus\n"
                 "bandwidth, and one FSDP step of a small GPT-2 against the same step on one CPU rank.  The CPU\n"
                 "half always runs (2 ranks, gloo); the GPU half when a CUDA device is visible (one rank per GPU,\n"
                 "nccl).  Exit 0 only when every line passed.\n"
                 "\n"
                 "  --gpu                 require the GPU half (exit 2 when no CUDA device is visible)\n"
                 "  --nproc-per-node N    ranks of the half under test (default: 2 on CPUs, every GPU)\n"
                 "  --quick               fewer sizes, no bandwidth sweep (a few seconds on CPUs)\n"
                 "  --results FILE        every line as JSON, written atomically\n"
                 "  --keep                keep the temporary folder (jobs, logs, checkpoints) and print it\n");
}

/* ---- lines ---------------------------------------------------------------------------------------- */

/* Reads every rank's PREFIX.rankR.tsv; returns the number of files read. */
static int read_lines(sr__selftest_lines *l, const char *half, const char *prefix) {
    char pat[4300];
    snprintf(pat, sizeof pat, "%s.rank*.tsv", prefix);
    glob_t g;
    if (glob(pat, 0, NULL, &g) != 0) return 0;
    int files = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *f = fopen(g.gl_pathv[i], "r");
        if (!f) continue;
        files++;
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, f) > 0) {
            line[strcspn(line, "\n")] = 0;
            char *field[5] = {0}, *s = line;
            int nf = 0;
            for (; nf < 5 && s; nf++) {
                field[nf] = s;
                s = strchr(s, '\t');
                if (s) *s++ = 0;
            }
            if (nf < 4) continue;
            /* a failure says on which rank (each GPU is checked by its own) */
            const char *r = strstr(g.gl_pathv[i], ".rank");
            char *detail = strcmp(field[0], "FAIL") ? NULL : sr__fmt("rank %d: %s", r ? atoi(r + 5) : -1, field[3]);
            sr__selftest_add(l, half, field[0], field[1], field[2], detail ? detail : field[3], field[4]);
            free(detail);
        }
        free(line);
        fclose(f);
    }
    globfree(&g);
    return files;
}

/* ---- the halves ---------------------------------------------------------------------------------- */

/* The selftest task on `nproc` ranks of `backend`; its lines, or one FAIL line saying why not.
   `tag` names its job and log files; `transport` ([torch] transport) and `parts` ([task] parts)
   are left to their defaults when NULL. */
static void run_task(sr__selftest_lines *l, const char *dir, const char *half, const char *tag, const char *backend,
                     const char *transport, const char *parts, int nproc, int quick, char *const *passthrough,
                     int single_node) {
    char job[4200], log[4200], prefix[4200];
    snprintf(job, sizeof job, "%s/selftest-%s.ini", dir, tag);
    snprintf(log, sizeof log, "%s/selftest-%s.log", dir, tag);
    snprintf(prefix, sizeof prefix, "%s/lines-%s", dir, tag); /* the workers' "lines-TAG" (they run in dir) */
    FILE *f = fopen(job, "w");
    if (!f) {
        sr__selftest_add(l, half, "FAIL", "setup", "selftest task", "cannot write its job file", NULL);
        return;
    }
    /* timeout: a backstop only.  The checks keep the ranks in step (selftest/check_pg.c), so a
       wrong collective is a FAIL line at once; this bounds what they cannot see (a collective that
       never returns), where torch's 1800 s would leave the command silent for half an hour. */
    fprintf(f,
            "[shardrun]\ntask = selftest\nplugins = torch\nnproc_per_node = %d\n%s\n[torch]\nbackend = %s\n"
            "timeout = %d\n%s%s%s\n[task]\nlines = lines-%s\nquick = %d\n%s%s%s",
            nproc, single_node ? "master_port = 0\n" : "", backend, SELFTEST_COLLECTIVE_TIMEOUT_S,
            transport ? "transport = " : "", transport ? transport : "", transport ? "\n" : "", tag, quick,
            parts ? "parts = " : "", parts ? parts : "", parts ? "\n" : "");
    fclose(f);
    int rc = sr__selftest_subrun(job, log, NULL, passthrough);
    int files = read_lines(l, half, prefix);
    if ((rc != 0 || files == 0) && !sr__selftest_stopped()) {
        char *why = sr__fmt("the run of the selftest task %s (exit %d); its output: %s",
                            rc == 2 ? "was refused" : "failed", rc, log);
        sr__selftest_add(l, half, "FAIL", "setup", "selftest task", why ? why : "the run of the selftest task failed",
                         NULL);
        free(why);
        sr__selftest_show_log(log);
    }
}

/* ---- output --------------------------------------------------------------------------------------- */

static void print_lines(const sr__selftest_lines *l, size_t from) {
    for (size_t i = from; i < l->n; i++) {
        const sr__selftest_line *x = &l->v[i];
        printf("%s  %-10s %-34s %s", x->status, x->group, x->name, x->detail);
        if (x->ranks > 1) printf(" [%d ranks]", x->ranks);
        printf("\n");
    }
    fflush(stdout);
}

static void json_metrics(sr__buf *b, const char *m) {
    sr__buf_printf(b, "{");
    char *copy = sr__strdup(m ? m : ""), *save = NULL;
    if (!copy) {
        b->oom = 1;
        return;
    }
    int first = 1;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        double v;
        if (sr__parse_float(eq + 1, &v) != 0) continue;
        sr__buf_printf(b, "%s", first ? "" : ", ");
        sr__buf_json_str(b, tok);
        sr__buf_printf(b, ": %.6g", v);
        first = 0;
    }
    free(copy);
    sr__buf_printf(b, "}");
}

static int write_json(const char *path, const sr__selftest_lines *l, int failed, const char *gpu_note, int quick) {
    sr__buf b = {0};
    int skipped = 0;
    for (size_t i = 0; i < l->n; i++) skipped += !strcmp(l->v[i].status, "SKIP");
    sr__buf_printf(&b,
                   "{\n  \"verdict\": \"%s\",\n  \"checks\": %zu,\n  \"failed\": %d,\n  \"skipped\": %d,\n  \"quick\": "
                   "%s,\n  \"gpu_half\": ",
                   failed ? "FAIL" : "PASS", l->n, failed, skipped, quick ? "true" : "false");
    sr__buf_json_str(&b, gpu_note);
    sr__buf_printf(&b, ",\n  \"lines\": [\n");
    for (size_t i = 0; i < l->n; i++) {
        const sr__selftest_line *x = &l->v[i];
        sr__buf_printf(&b, "    {\"half\": \"%s\", \"status\": \"%s\", \"group\": ", x->half, x->status);
        sr__buf_json_str(&b, x->group);
        sr__buf_printf(&b, ", \"name\": ");
        sr__buf_json_str(&b, x->name);
        sr__buf_printf(&b, ", \"ranks\": %d, \"detail\": ", x->ranks);
        sr__buf_json_str(&b, x->detail);
        sr__buf_printf(&b, ", \"metrics\": ");
        json_metrics(&b, x->metrics);
        sr__buf_printf(&b, "}%s\n", i + 1 < l->n ? "," : "");
    }
    sr__buf_printf(&b, "  ]\n}\n");
    char why[4600];
    int ok = !b.oom && sr__out_write(path, b.s, b.n, why, sizeof why) == 0;
    if (!ok) sr__log(SR_LOG_ERROR, "cannot write the selftest results: %s", b.oom ? "out of memory" : why);
    sr__buf_free(&b);
    return ok ? 0 : -1;
}

/* ---- the command ---------------------------------------------------------------------------------- */

typedef struct selftest_opts {
    int gpu, quick, keep, multi; /* multi: several nodes (cluster flags or SLURM_NNODES > 1) */
    int nproc;                   /* --nproc-per-node, 0: the default of each half */
    const char *results;
    char *pass[16]; /* cluster flags handed to every sub-run, as "--flag" "value" pairs */
    int npass;
} selftest_opts;

enum {
    OPT_GPU = 256,
    OPT_QUICK,
    OPT_KEEP,
    OPT_RESULTS,
    OPT_NPROC,
    OPT_NNODES,
    OPT_NODE_RANK,
    OPT_MASTER_ADDR,
    OPT_MASTER_PORT
};

static const struct option long_opts[] = {
    {"help", no_argument, NULL, 'h'},
    {"gpu", no_argument, NULL, OPT_GPU},
    {"quick", no_argument, NULL, OPT_QUICK},
    {"keep", no_argument, NULL, OPT_KEEP},
    {"results", required_argument, NULL, OPT_RESULTS},
    {"nproc-per-node", required_argument, NULL, OPT_NPROC},
    {"nproc_per_node", required_argument, NULL, OPT_NPROC},
    {"nnodes", required_argument, NULL, OPT_NNODES},
    {"node-rank", required_argument, NULL, OPT_NODE_RANK},
    {"master-addr", required_argument, NULL, OPT_MASTER_ADDR},
    {"master-port", required_argument, NULL, OPT_MASTER_PORT},
    {NULL, 0, NULL, 0},
};

/* The cluster flags as the sub-runs take them (indexed by OPT_ - OPT_NNODES). */
static char *const cluster_flags[] = {"--nnodes", "--node-rank", "--master-addr", "--master-port"};

/* Fills o from argv; -1 to go on, else the exit code (0 after --help, 2 for a bad flag, said why).
   "+": the first argument that is no flag ends the flags (and is refused: there is no job file);
   opterr = 0: the messages are shardrun's own. */
static int parse_flags(int argc, char **argv, selftest_opts *o) {
    optind = 0, opterr = 0;
    for (;;) {
        const char *at = (optind ? optind : 1) < argc ? argv[optind ? optind : 1] : ""; /* the flag being read */
        int idx = -1, c = getopt_long(argc, argv, "+:h", long_opts, &idx);
        if (c == -1) break;
        const char *flag = idx >= 0 ? long_opts[idx].name : NULL;
        char name[64];
        snprintf(name, sizeof name, "--%s", flag ? flag : "");
        switch (c) {
        case 'h': usage(stdout); return SR__EXIT_OK;
        case OPT_GPU: o->gpu = 1; break;
        case OPT_QUICK: o->quick = 1; break;
        case OPT_KEEP: o->keep = 1; break;
        case OPT_RESULTS: o->results = optarg; break;
        case OPT_NPROC: {
            long long n;
            if (sr__parse_int(optarg, &n) != 0 || n < 1 || n > 4096) {
                sr__log(SR_LOG_ERROR, "selftest: %s %s: expected a number of ranks from 1 to 4096", name, optarg);
                return SR__EXIT_CONFIG;
            }
            o->nproc = (int)n;
            break;
        }
        case OPT_NNODES:
        case OPT_NODE_RANK:
        case OPT_MASTER_ADDR:
        case OPT_MASTER_PORT:
            if (o->npass < 14) o->pass[o->npass++] = cluster_flags[c - OPT_NNODES], o->pass[o->npass++] = optarg;
            o->multi = 1;
            break;
        case ':':
            sr__log(SR_LOG_ERROR, "selftest: %s needs a value (see shardrun selftest --help)", at);
            return SR__EXIT_CONFIG;
        default:
            sr__log(SR_LOG_ERROR, "selftest: unknown argument %s (it takes no job file; see shardrun selftest --help)",
                    at);
            return SR__EXIT_CONFIG;
        }
    }
    if (optind < argc || (optind > 1 && !strcmp(argv[optind - 1], "--"))) {
        sr__log(SR_LOG_ERROR, "selftest: unknown argument %s (it takes no job file; see shardrun selftest --help)",
                optind < argc ? argv[optind] : "--");
        return SR__EXIT_CONFIG;
    }
    return -1;
}

/* What is checked before any check runs: --results writable, SLURM_NNODES a number.  0 or exit 2. */
static int check_setup(selftest_opts *o) {
    if (o->results) { /* base/out_file.h */
        char why[4600];
        if (sr__out_check(o->results, NULL, 0, why, sizeof why) != 0) {
            sr__log(SR_LOG_ERROR, "selftest: --results: %s (checked before any check runs)", why);
            return SR__EXIT_CONFIG;
        }
    }
    const char *slurm_nodes = getenv("SLURM_NNODES");
    long long slurm_n = 0;
    if (slurm_nodes && (sr__parse_int(slurm_nodes, &slurm_n) != 0 || slurm_n < 1 || slurm_n > 65536)) {
        sr__log(SR_LOG_ERROR,
                "selftest: SLURM_NNODES=\"%.64s\" is not a number of nodes (a whole number from 1 to "
                "65536); fix or unset it (checked before any check runs)",
                slurm_nodes);
        return SR__EXIT_CONFIG;
    }
    if (slurm_n > 1) o->multi = 1;
    return 0;
}

/* One half: the selftest task, then (on one node) the FSDP step comparison; prints its lines.
   -1 when a signal stopped it. */
static int run_half(sr__selftest_lines *l, const char *dir, const selftest_opts *o, const char *half,
                    const char *backend, int nproc) {
    size_t from = l->n;
    run_task(l, dir, half, half, backend, NULL, NULL, nproc, o->quick, o->pass, !o->multi);
    /* gloo: the collectives once more over Gloo's TCP, which the default transport leaves to the
       groups that span hosts (shm inside a host) */
    if (!strcmp(backend, "gloo") && !sr__selftest_stopped()) {
        char tag[64];
        snprintf(tag, sizeof tag, "%s-tcp", half);
        run_task(l, dir, half, tag, backend, "tcp", "pg", nproc, o->quick, o->pass, !o->multi);
    }
    if (!o->multi) sr__selftest_fsdp(l, &(sr__selftest_fsdp_args){dir, half, backend, nproc, o->quick, o->pass});
    if (sr__selftest_stopped()) return -1;
    print_lines(l, from);
    return 0;
}

/* The verdict line; the exit code. */
static int verdict(const sr__selftest_lines *l, int ngpu, int *failed) {
    int skipped = 0;
    *failed = 0;
    for (size_t i = 0; i < l->n; i++)
        *failed += !strcmp(l->v[i].status, "FAIL"), skipped += !strcmp(l->v[i].status, "SKIP");
    if (l->lost) { /* a check it could not keep may be a failure: never a PASS */
        printf("verdict: FAIL: %d checks could not be recorded (out of memory)\n", l->lost);
        *failed += l->lost;
    } else if (*failed) {
        printf("verdict: FAIL: %d of %zu checks failed:", *failed, l->n);
        for (size_t i = 0, shown = 0; i < l->n && shown < 8; i++)
            if (!strcmp(l->v[i].status, "FAIL")) printf("%s %s", shown++ ? "," : "", l->v[i].name);
        printf("%s\n", *failed > 8 ? ", ..." : "");
    } else {
        printf("verdict: PASS: all %zu checks passed%s%s\n", l->n - (size_t)skipped,
               skipped ? " (some could not run here: the SKIP lines)" : "",
               ngpu > 0 ? "" : " (CPU half only: the GPU half was not run)");
    }
    return *failed || l->n == 0 ? SR__EXIT_FAILED : SR__EXIT_OK;
}

int sr__cmd_selftest(int argc, char **argv) {
    selftest_opts o = {0};
    int rc = parse_flags(argc, argv, &o);
    if (rc >= 0) return rc;
    if (check_setup(&o) != 0) return SR__EXIT_CONFIG;
    char why[4600] = "";
    int ngpu = sr__cuda_device_count(why, sizeof why);
    const char *no_gpu = why[0] ? why : "0 devices";
    if (o.gpu && ngpu <= 0) {
        sr__log(SR_LOG_ERROR, "selftest --gpu: no CUDA device is visible (%s); run without --gpu for the CPU half",
                no_gpu);
        return SR__EXIT_CONFIG;
    }
    const char *tmpdir = getenv("TMPDIR");
    char *dir = sr__fmt("%s/shardrun-selftest-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) {
        sr__log(SR_LOG_ERROR, "selftest: cannot create a temporary folder %s: %s; set TMPDIR to a writable folder", dir,
                strerror(errno));
        free(dir);
        return SR__EXIT_CONFIG;
    }
    struct sigaction old_sa[3];
    sr__selftest_catch_signals(old_sa);
    sr__selftest_lines l = {0};
    const char *fault = getenv("SHARDRUN_DEBUG_PG_FAULT");
    if (fault && *fault)
        printf(
            "shardrun selftest: SHARDRUN_DEBUG_PG_FAULT=%s is set: a collective is wrong on purpose (a testing aid)\n",
            fault);
    const char *per_node = o.multi ? " per node" : "";
    int cpu_n = ngpu > 0 || !o.nproc ? 2 : o.nproc;
    printf("shardrun selftest: CPU half: %d rank%s%s, gloo%s; the collectives over transport auto (%s), then tcp\n",
           cpu_n, cpu_n == 1 ? "" : "s", per_node, o.quick ? " (--quick)" : "",
           o.multi ? "shm inside each node, Gloo's TCP between" : "shared memory");
    int stopped = run_half(&l, dir, &o, "cpu", "gloo", cpu_n) != 0;
    char gpu_note[5000];
    if (!stopped && ngpu > 0) {
        int g_n = o.nproc ? o.nproc : ngpu;
        printf("shardrun selftest: GPU half: %d rank%s%s, nccl, %d CUDA device%s visible\n", g_n, g_n == 1 ? "" : "s",
               per_node, ngpu, ngpu == 1 ? "" : "s");
        stopped = run_half(&l, dir, &o, "gpu", "nccl", g_n) != 0;
        snprintf(gpu_note, sizeof gpu_note, "run: %d ranks, nccl", g_n);
    } else if (!stopped) {
        snprintf(gpu_note, sizeof gpu_note, "not run: no CUDA device is visible (%s)", no_gpu);
        printf("shardrun selftest: GPU half NOT RUN: no CUDA device is visible (%s); nothing was checked on a GPU\n",
               no_gpu);
    }
    if (stopped) { /* no verdict, no results file, nothing left behind */
        sr__log(SR_LOG_ERROR, "selftest: stopped by signal %d; no verdict", sr__selftest_stopped());
        rc = SR__EXIT_SIGNAL_BASE + sr__selftest_stopped();
    } else {
        if (o.multi)
            printf("shardrun selftest: several nodes: the FSDP step comparison was not run (it needs one node: run "
                   "shardrun selftest on each node alone); this node's table holds its own ranks' lines\n");
        int failed;
        rc = verdict(&l, ngpu, &failed);
        if (o.results && write_json(o.results, &l, failed, gpu_note, o.quick) != 0) rc = SR__EXIT_FAILED;
    }
    if (o.keep && !stopped) printf("shardrun selftest: jobs, logs and checkpoints kept in %s\n", dir);
    else sr__remove_tree(dir);
    free(dir);
    sr__selftest_lines_free(&l);
    sr__selftest_restore_signals(old_sa);
    return rc;
}
