/* `shardrun plot OUTPUT_DIR [--compare OTHER_DIR ...] [-o FILE]`: the loss curves of one or several
   runs on one chart, from the trainer_state.json each run's output_dir (or checkpoint folder)
   holds (trainer/loss_plot.h draws it). */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/out_file.h"
#include "base/strbuf.h"
#include "trainer/loss_plot.h"
#include "trainer/records.h"

int sr__cmd_plot(int argc, char **argv);

/* `what` NULL: its message found no memory. */
static int usage_error(const char *what) {
    sr__log(SR_LOG_ERROR, "shardrun plot: %s; usage: shardrun plot OUTPUT_DIR [--compare OTHER_DIR ...] [-o FILE]",
            what ? what : "bad arguments (out of memory for the details)");
    return 2;
}

/* The legend's name of a run: the folder's last component ("runs/full_shard/" -> "full_shard"). */
static char *run_name(const char *dir) {
    char *d = sr__strdup(dir);
    if (!d) return NULL;
    size_t n = strlen(d);
    while (n > 1 && d[n - 1] == '/') d[--n] = 0;
    const char *s = strrchr(d, '/');
    char *name = sr__strdup(s && s[1] ? s + 1 : d);
    free(d);
    return name;
}

static const struct option long_opts[] = {
    {"help", no_argument, NULL, 'h'},
    {"compare", no_argument, NULL, 'c'},
    {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};

/* The folders, in order, into dirs[*n] and -o into *out; -1 to go on, else the exit code (0 after
   --help, 2 after saying why).  getopt_long with "-": the folders stay in order among the flags
   (one after --compare is a run to compare); opterr = 0: the messages are plot's own. */
static int parse_flags(int argc, char **argv, const char **dirs, int *n, const char **out) {
    int compare = 0;
    optind = 0, opterr = 0;
    for (;;) {
        const char *at = (optind ? optind : 1) < argc ? argv[optind ? optind : 1] : ""; /* the argument being read */
        int c = getopt_long(argc, argv, "-:ho:", long_opts, NULL);
        if (c == -1) break;
        switch (c) {
        case 'h':
            printf("usage: shardrun plot OUTPUT_DIR [--compare OTHER_DIR ...] [-o FILE]\n"
                   "  draws train loss (solid) and eval loss (dashed) against step from each folder's\n"
                   "  trainer_state.json (an output_dir or a checkpoint folder), several runs on one chart;\n"
                   "  FILE defaults to OUTPUT_DIR/loss.svg, or OUTPUT_DIR/loss_compare.svg with --compare\n");
            return 0;
        case 'c': compare = 1; break;
        case 'o': *out = optarg; break;
        case ':': return usage_error("-o needs a file name");
        case 1: {
            char *m = NULL;
            if (!strcmp(optarg, "-")) return usage_error("unknown option -"); /* no folder */
            if (*n > 0 && !compare) {
                m = sr__fmt("a second folder (%s) without --compare before it", optarg);
                int rc = usage_error(m);
                free(m);
                return rc;
            }
            dirs[(*n)++] = optarg;
            break;
        }
        default: {
            char *m = sr__fmt("unknown option %s", at);
            int rc = usage_error(m);
            free(m);
            return rc;
        }
        }
    }
    /* after "--" only folders, under the same rule */
    for (; optind < argc; optind++) {
        if (*n > 0 && !compare) {
            char *m = sr__fmt("a second folder (%s) without --compare before it", argv[optind]);
            int rc = usage_error(m);
            free(m);
            return rc;
        }
        dirs[(*n)++] = argv[optind];
    }
    return -1;
}

/* argv[0] is "plot". */
int sr__cmd_plot(int argc, char **argv) {
    const char **dirs = sr__calloc((size_t)argc, sizeof *dirs), *out = NULL;
    if (!dirs) {
        sr__log(SR_LOG_ERROR, "shardrun plot: out of memory for %d arguments", argc);
        return 1;
    }
    int n = 0, rc = parse_flags(argc, argv, dirs, &n, &out);
    if (rc >= 0) {
        free(dirs);
        return rc;
    }
    rc = 0;
    if (n == 0) {
        free(dirs);
        return usage_error("no OUTPUT_DIR given");
    }
    sr__history *h = sr__calloc((size_t)n, sizeof *h);
    sr__plot_run *runs = sr__calloc((size_t)n, sizeof *runs);
    char **states = sr__calloc((size_t)n, sizeof *states);
    char why[4600];
    if (!h || !runs || !states) {
        sr__log(SR_LOG_ERROR, "shardrun plot: out of memory for %d runs", n);
        free(h), free(runs), free(states), free(dirs);
        return 1;
    }
    for (int k = 0; k < n && !rc; k++) {
        struct stat st;
        if (stat(dirs[k], &st) != 0 || !S_ISDIR(st.st_mode)) {
            sr__log(SR_LOG_ERROR,
                    "shardrun plot: %s is not a folder; name a run's output_dir (or a checkpoint-N "
                    "folder in it), which holds trainer_state.json",
                    dirs[k]);
            rc = 2;
        }
        states[k] = sr__fmt("%s/trainer_state.json", dirs[k]);
        runs[k].h = &h[k];
        runs[k].name = run_name(dirs[k]);
        if (!rc && (!states[k] || !runs[k].name)) {
            sr__log(SR_LOG_ERROR, "shardrun plot: out of memory for the names of %s", dirs[k]);
            rc = 1;
        }
    }
    /* the chart's file, before anything is read: never one of the runs' trainer_state.json */
    char *path = out ? sr__strdup(out) : sr__fmt("%s/%s", dirs[0], n > 1 ? "loss_compare.svg" : "loss.svg");
    if (!rc && !path) {
        sr__log(SR_LOG_ERROR, "shardrun plot: out of memory for the chart's file name");
        rc = 1;
    }
    if (!rc && sr__out_check(path, (const char *const *)states, n, why, sizeof why) != 0) {
        sr__log(SR_LOG_ERROR, "shardrun plot: %s%s", out ? "-o: " : "", why);
        rc = 2;
    }
    for (int k = 0; k < n && !rc; k++)
        if (sr__history_read(states[k], &h[k], why, sizeof why) != 0) {
            sr__log(SR_LOG_ERROR, "shardrun plot: %s; a run writes it in output_dir at each save and at the end", why);
            rc = 2;
        }
    if (!rc) {
        if (sr__loss_svg_write(path, runs, n, why, sizeof why) != 0) {
            sr__log(SR_LOG_ERROR, "shardrun plot: %s", why);
            rc = 1;
        } else {
            /* the note goes to stderr when the chart went to stdout (-o /dev/stdout) */
            struct stat o, so;
            int to_stdout = stat(path, &o) == 0 && fstat(1, &so) == 0 && o.st_dev == so.st_dev && o.st_ino == so.st_ino;
            fprintf(to_stdout ? stderr : stdout, "shardrun: wrote %s (%d run%s)\n", path, n, n == 1 ? "" : "s");
        }
    }
    free(path);
    for (int k = 0; k < n; k++) {
        sr__history_free(&h[k]);
        free((char *)runs[k].name);
        free(states[k]);
    }
    free(h), free(runs), free(states), free(dirs);
    return rc;
}
