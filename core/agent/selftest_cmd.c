/* `shardrun selftest` (see selftest.h): flags, the halves, merging, the table, the verdict. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/selftest.h"
#include "base/log.h"
#include "base/out_file.h"
#include "config/value.h"
#include "device/cuda_lib.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: shardrun selftest [--gpu] [--nproc-per-node N] [--quick] [--results FILE]\n"
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

void sr__st_add(sr_st_lines *l, const char *half, const char *status, const char *group, const char *name,
                const char *detail, const char *metrics) {
    int pass = !strcmp(status, "PASS");
    for (size_t i = 0; i < l->n; i++) {
        sr_st_line *x = &l->v[i];
        if (strcmp(x->half, half) || strcmp(x->group, group) || strcmp(x->name, name)) continue;
        x->ranks++;
        if (!pass && strcmp(x->status, "FAIL")) { /* the first failure (or skip) tells */
            snprintf(x->status, sizeof x->status, "%s", status);
            free(x->detail);
            x->detail = strdup(detail);
        }
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        sr_st_line *v = realloc(l->v, cap * sizeof *v);
        if (!v) return;
        l->v = v, l->cap = cap;
    }
    sr_st_line *x = &l->v[l->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->half, sizeof x->half, "%s", half);
    snprintf(x->status, sizeof x->status, "%s", !strcmp(status, "SKIP") ? "SKIP" : pass ? "PASS" : "FAIL");
    x->group = strdup(group), x->name = strdup(name), x->detail = strdup(detail);
    x->metrics = strdup(metrics ? metrics : "");
    x->ranks = 1;
}

static void lines_free(sr_st_lines *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i].group), free(l->v[i].name), free(l->v[i].detail), free(l->v[i].metrics);
    free(l->v);
}

/* Reads every rank's PREFIX.rankR.tsv; returns the number of files read. */
static int read_lines(sr_st_lines *l, const char *half, const char *prefix) {
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
            sr__st_add(l, half, field[0], field[1], field[2], detail ? detail : field[3], field[4]);
            free(detail);
        }
        free(line);
        fclose(f);
    }
    globfree(&g);
    return files;
}

/* ---- sub-runs ------------------------------------------------------------------------------------- */

/* SIGINT, SIGTERM, SIGHUP while a sub-run runs: handed on to it (it stops its workers as any run
   does), and no further sub-run starts; the command then cleans up and exits 128+N. */
static volatile sig_atomic_t stop_signal;
static volatile pid_t running;

static void on_signal(int sig) {
    stop_signal = sig;
    if (running > 0) kill(running, sig);
}

int sr__st_stopped(void) { return stop_signal; }

static const int stop_sigs[3] = {SIGINT, SIGTERM, SIGHUP};

/* From the temporary folder's creation to its removal (old: the dispositions to restore). */
static void catch_signals(struct sigaction old[3]) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) sigaction(stop_sigs[i], &sa, &old[i]);
}

int sr__st_subrun(const char *job, const char *log, const char *env_set, char *const *passthrough) {
    if (stop_signal) return 128 + stop_signal;
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return -1;
    self[len] = 0;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        /* its own process group: a Ctrl-C reaches it once, through on_signal */
        setpgid(0, 0);
        for (int i = 0; i < 3; i++) signal(stop_sigs[i], SIG_DFL);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(127);
        /* in the job's folder: paths in it can be relative, the same on every node (every [task]
           key is part of the fingerprint the nodes of a run must agree on) */
        char *folder = strdup(job), *slash = folder ? strrchr(folder, '/') : NULL;
        if (slash) *slash = 0;
        if (!folder || chdir(slash ? folder : ".") != 0) _exit(127);
        free(folder);
        if (env_set) putenv((char *)env_set);
        char *argv[32];
        int n = 0;
        argv[n++] = self;
        argv[n++] = (char *)job;
        for (int i = 0; passthrough && passthrough[i] && n < 30; i++) argv[n++] = passthrough[i];
        argv[n] = NULL;
        execv(self, argv);
        _exit(127);
    }
    running = pid;
    if (stop_signal) kill(pid, stop_signal); /* arrived between fork and here */
    int st = 0, rc = -1;
    while ((rc = (int)waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
    }
    running = 0;
    if (rc < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void sr__st_show_log(const char *log) {
    FILE *f = fopen(log, "r");
    if (!f) return;
    char *ring[12] = {0}, *line = NULL;
    size_t cap = 0, n = 0;
    while (getline(&line, &cap, f) > 0) {
        free(ring[n % 12]);
        ring[n++ % 12] = strdup(line);
    }
    free(line);
    fclose(f);
    fprintf(stderr, "  last lines of %s:\n", log);
    for (size_t i = n > 12 ? n - 12 : 0; i < n; i++) {
        fprintf(stderr, "    %s", ring[i % 12] ? ring[i % 12] : "\n");
        free(ring[i % 12]);
        ring[i % 12] = NULL;
    }
}

/* The selftest task on `nproc` ranks of `backend`; its lines, or one FAIL line saying why not. */
static void run_task(sr_st_lines *l, const char *dir, const char *half, const char *backend, int nproc, int quick,
                     char *const *passthrough, int single_node) {
    char job[4200], log[4200], prefix[4200];
    snprintf(job, sizeof job, "%s/selftest-%s.ini", dir, half);
    snprintf(log, sizeof log, "%s/selftest-%s.log", dir, half);
    snprintf(prefix, sizeof prefix, "%s/lines-%s", dir, half); /* the workers' "lines-HALF" (they run in dir) */
    FILE *f = fopen(job, "w");
    if (!f) {
        sr__st_add(l, half, "FAIL", "setup", "selftest task", "cannot write its job file", NULL);
        return;
    }
    fprintf(f, "[shardrun]\ntask = selftest\nplugins = torch\nnproc_per_node = %d\n%s\n[torch]\nbackend = %s\n\n"
               "[task]\nlines = lines-%s\nquick = %d\n",
            nproc, single_node ? "master_port = 0\n" : "", backend, half, quick);
    fclose(f);
    int rc = sr__st_subrun(job, log, NULL, passthrough);
    int files = read_lines(l, half, prefix);
    if ((rc != 0 || files == 0) && !stop_signal) {
        char *why = sr__fmt("the run of the selftest task %s (exit %d); its output: %s",
                            rc == 2 ? "was refused" : "failed", rc, log);
        sr__st_add(l, half, "FAIL", "setup", "selftest task", why, NULL);
        free(why);
        sr__st_show_log(log);
    }
}

/* ---- output --------------------------------------------------------------------------------------- */

static void print_lines(const sr_st_lines *l, size_t from) {
    for (size_t i = from; i < l->n; i++) {
        const sr_st_line *x = &l->v[i];
        printf("%s  %-10s %-34s %s", x->status, x->group, x->name, x->detail);
        if (x->ranks > 1) printf(" [%d ranks]", x->ranks);
        printf("\n");
    }
    fflush(stdout);
}

static void json_metrics(sr_buf *b, const char *m) {
    sr__buf_printf(b, "{");
    char *copy = strdup(m ? m : ""), *save = NULL;
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

static int write_json(const char *path, const sr_st_lines *l, int failed, const char *gpu_note, int quick) {
    sr_buf b = {0};
    int skipped = 0;
    for (size_t i = 0; i < l->n; i++) skipped += !strcmp(l->v[i].status, "SKIP");
    sr__buf_printf(&b, "{\n  \"verdict\": \"%s\",\n  \"checks\": %zu,\n  \"failed\": %d,\n  \"skipped\": %d,\n  \"quick\": %s,\n  \"gpu_half\": ",
                   failed ? "FAIL" : "PASS", l->n, failed, skipped, quick ? "true" : "false");
    sr__buf_json_str(&b, gpu_note);
    sr__buf_printf(&b, ",\n  \"lines\": [\n");
    for (size_t i = 0; i < l->n; i++) {
        const sr_st_line *x = &l->v[i];
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

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static int remove_tree(const char *dir) { return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

int sr__cmd_selftest(int argc, char **argv) {
    int gpu = 0, quick = 0, keep = 0;
    long long nproc = 0;
    const char *results = NULL;
    char *pass[16] = {0}; /* cluster flags handed to every sub-run */
    int npass = 0, multi = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--gpu")) gpu = 1;
        else if (!strcmp(a, "--quick")) quick = 1;
        else if (!strcmp(a, "--keep")) keep = 1;
        else if (!strcmp(a, "--results") || !strcmp(a, "--nproc-per-node") || !strcmp(a, "--nproc_per_node") ||
                 !strcmp(a, "--nnodes") || !strcmp(a, "--node-rank") || !strcmp(a, "--master-addr") ||
                 !strcmp(a, "--master-port")) {
            if (i + 1 >= argc) {
                sr__log(SR_LOG_ERROR, "selftest: %s needs a value (see shardrun selftest --help)", a);
                return SR_EXIT_CONFIG;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--results")) {
                results = v;
            } else if (!strncmp(a, "--nproc", 7)) {
                if (sr__parse_int(v, &nproc) != 0 || nproc < 1 || nproc > 4096) {
                    sr__log(SR_LOG_ERROR, "selftest: %s %s: expected a number of ranks from 1 to 4096", a, v);
                    return SR_EXIT_CONFIG;
                }
            } else if (npass < 14) {
                pass[npass++] = (char *)a, pass[npass++] = (char *)v;
                multi = 1;
            }
        } else {
            sr__log(SR_LOG_ERROR, "selftest: unknown argument %s (it takes no job file; see shardrun selftest --help)", a);
            return SR_EXIT_CONFIG;
        }
    }
    /* --results is checked before anything runs (base/out_file.h) */
    if (results) {
        char why[4600];
        if (sr__out_check(results, NULL, 0, why, sizeof why) != 0) {
            sr__log(SR_LOG_ERROR, "selftest: --results: %s (checked before any check runs)", why);
            return SR_EXIT_CONFIG;
        }
    }
    const char *slurm_nodes = getenv("SLURM_NNODES");
    long long slurm_n = 0;
    if (slurm_nodes && (sr__parse_int(slurm_nodes, &slurm_n) != 0 || slurm_n < 1 || slurm_n > 65536)) {
        sr__log(SR_LOG_ERROR, "selftest: SLURM_NNODES=\"%.64s\" is not a number of nodes (a whole number from 1 to "
                "65536); fix or unset it (checked before any check runs)", slurm_nodes);
        return SR_EXIT_CONFIG;
    }
    if (slurm_n > 1) multi = 1;
    char why[4600] = "";
    int ngpu = sr__cuda_device_count(why, sizeof why);
    if (gpu && ngpu <= 0) {
        sr__log(SR_LOG_ERROR, "selftest --gpu: no CUDA device is visible (%s); run without --gpu for the CPU half",
                why[0] ? why : "0 devices");
        return SR_EXIT_CONFIG;
    }
    const char *tmpdir = getenv("TMPDIR");
    char *dir = sr__fmt("%s/shardrun-selftest-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) {
        sr__log(SR_LOG_ERROR, "selftest: cannot create a temporary folder %s: %s; set TMPDIR to a writable folder", dir,
                strerror(errno));
        free(dir);
        return SR_EXIT_CONFIG;
    }
    struct sigaction old_sa[3];
    catch_signals(old_sa);
    sr_st_lines l = {0};
    int cpu_n = ngpu > 0 || !nproc ? 2 : (int)nproc;
    printf("shardrun selftest: CPU half: %d rank%s%s, gloo%s\n", cpu_n, cpu_n == 1 ? "" : "s", multi ? " per node" : "",
           quick ? " (--quick)" : "");
    size_t from = l.n;
    run_task(&l, dir, "cpu", "gloo", cpu_n, quick, pass, !multi);
    if (!multi) sr__st_fsdp(&l, &(sr_st_fsdp){dir, "cpu", "gloo", cpu_n, quick, pass});
    if (stop_signal) goto stopped;
    print_lines(&l, from);
    char gpu_note[5000];
    if (ngpu > 0) {
        int g_n = nproc ? (int)nproc : ngpu;
        printf("shardrun selftest: GPU half: %d rank%s%s, nccl, %d CUDA device%s visible\n", g_n, g_n == 1 ? "" : "s",
               multi ? " per node" : "", ngpu, ngpu == 1 ? "" : "s");
        from = l.n;
        run_task(&l, dir, "gpu", "nccl", g_n, quick, pass, !multi);
        if (!multi) sr__st_fsdp(&l, &(sr_st_fsdp){dir, "gpu", "nccl", g_n, quick, pass});
        if (stop_signal) goto stopped;
        print_lines(&l, from);
        snprintf(gpu_note, sizeof gpu_note, "run: %d ranks, nccl", g_n);
    } else {
        snprintf(gpu_note, sizeof gpu_note, "not run: no CUDA device is visible (%s)", why[0] ? why : "0 devices");
        printf("shardrun selftest: GPU half NOT RUN: no CUDA device is visible (%s); nothing was checked on a GPU\n",
               why[0] ? why : "0 devices");
    }
    if (multi)
        printf("shardrun selftest: several nodes: the FSDP step comparison was not run (it needs one node: run "
               "shardrun selftest on each node alone); this node's table holds its own ranks' lines\n");
    int failed = 0, skipped = 0;
    for (size_t i = 0; i < l.n; i++) failed += !strcmp(l.v[i].status, "FAIL"), skipped += !strcmp(l.v[i].status, "SKIP");
    if (failed) {
        printf("verdict: FAIL: %d of %zu checks failed:", failed, l.n);
        for (size_t i = 0, shown = 0; i < l.n && shown < 8; i++)
            if (!strcmp(l.v[i].status, "FAIL")) printf("%s %s", shown++ ? "," : "", l.v[i].name);
        printf("%s\n", failed > 8 ? ", ..." : "");
    } else {
        printf("verdict: PASS: all %zu checks passed%s%s\n", l.n - (size_t)skipped,
               skipped ? " (some could not run here: the SKIP lines)" : "",
               ngpu > 0 ? "" : " (CPU half only: the GPU half was not run)");
    }
    int rc = failed || l.n == 0 ? SR_EXIT_FAILED : SR_EXIT_OK;
    if (results && write_json(results, &l, failed, gpu_note, quick) != 0) rc = SR_EXIT_FAILED;
    if (keep) printf("shardrun selftest: jobs, logs and checkpoints kept in %s\n", dir);
    else remove_tree(dir);
    free(dir);
    lines_free(&l);
    for (int i = 0; i < 3; i++) sigaction(stop_sigs[i], &old_sa[i], NULL);
    return rc;
stopped: /* no verdict, no results file, nothing left behind */
    sr__log(SR_LOG_ERROR, "selftest: stopped by signal %d; no verdict", (int)stop_signal);
    remove_tree(dir);
    free(dir);
    lines_free(&l);
    return SR_EXIT_SIGNAL_BASE + stop_signal;
}
