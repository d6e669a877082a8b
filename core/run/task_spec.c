#define _GNU_SOURCE
#include "run/task_spec.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "shardrun/task.h"
#include "base/abi.h"
#include "base/lib_dir.h"
#include "base/strbuf.h"
#include "run/task_probe.h"
#include "config/env_table.h"
#include "config/value.h"
#include "plugin/loader.h"
#include "run/elf_peek.h"
#include "trainer/train_args.h"

char **sr__split_words(const char *s, int *count, char *err, size_t errlen) {
    size_t n = 0;
    char **v = sr__calloc(strlen(s) / 2 + 2, sizeof *v);
    char *word = sr__malloc(strlen(s) + 1);
    if (!v || !word) {
        snprintf(err, errlen, "out of memory for the words of %zu characters", strlen(s));
        free(v), free(word);
        return NULL;
    }
    const char *p = s;
    while (1) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        size_t w = 0;
        char quote = 0;
        for (; *p && (quote || !isspace((unsigned char)*p)); p++) {
            if (quote) {
                if (*p == quote) quote = 0;
                else if (*p == '\\' && quote == '"' && p[1]) word[w++] = *++p;
                else word[w++] = *p;
            } else if (*p == '\'' || *p == '"') {
                quote = *p;
            } else if (*p == '\\' && p[1]) {
                word[w++] = *++p;
            } else {
                word[w++] = *p;
            }
        }
        if (quote) {
            snprintf(err, errlen, "unterminated %c quote", quote);
            for (size_t i = 0; i < n; i++) free(v[i]);
            free(v), free(word);
            return NULL;
        }
        if (!(v[n++] = sr__strndup(word, w))) {
            snprintf(err, errlen, "out of memory for a word of %zu characters", w);
            for (size_t i = 0; i < n; i++) free(v[i]);
            free(v), free(word);
            return NULL;
        }
    }
    free(word);
    *count = (int)n;
    return v;
}

/* Looks `prog` up like execvp would; returns a new string, or NULL (*oom set when memory ran out). */
static char *find_in_path(const char *prog, int *oom) {
    const char *path = getenv("PATH");
    char **dirs = sr__split_path(path ? path : "/usr/local/bin:/usr/bin:/bin");
    char *found = NULL;
    *oom = !dirs;
    for (char **d = dirs; d && *d && !found && !*oom; d++) {
        char *cand = sr__fmt("%s/%s", *d, prog);
        *oom = !cand;
        if (cand && access(cand, X_OK) == 0) found = cand;
        else free(cand);
    }
    sr__free_strv(dirs);
    return found;
}

static char *relative_to(const sr__setting *s, const sr__job *cfg, const char *p) {
    char cwd[PATH_MAX];
    if (p[0] == '/') return sr__strdup(p);
    const char *base = s->from == SR__FROM_FILE ? cfg->dir : (getcwd(cwd, sizeof cwd) ? cwd : ".");
    return sr__fmt("%s/%s", base, p);
}

static int resolve_exec(sr__job *cfg, const sr__setting *s, sr__task_spec *out) {
    char err[256];
    int n = 0;
    char **words = sr__split_words(s->value + 5, &n, err, sizeof err);
    if (!words || n == 0) {
        sr__diag_add(&cfg->diag, "%s: task \"%s\": %s; write task = exec:PROGRAM ARGS...", s->where, s->value,
                     words ? "no program after exec:" : err);
        if (words) free(words);
        return -1;
    }
    int oom = 0;
    char *prog = strchr(words[0], '/') ? relative_to(s, cfg, words[0]) : find_in_path(words[0], &oom);
    char *prog0 = prog ? sr__strdup(prog) : NULL;
    if (!prog && strchr(words[0], '/')) oom = 1; /* relative_to fails only for memory */
    if (!prog0 && (oom || prog)) {
        sr__diag_add(&cfg->diag, "%s: out of memory for the task program \"%s\"", s->where, words[0]);
        free(prog);
        for (int i = 0; i < n; i++) free(words[i]);
        free(words);
        return -1;
    }
    if (!prog || access(prog, X_OK) != 0) {
        free(prog0);
        sr__diag_add(&cfg->diag, "%s: task program \"%s\" %s; give an absolute path or install it", s->where, words[0],
                     strchr(words[0], '/') ? "is not an executable file" : "is not found in PATH");
        free(prog);
        for (int i = 0; i < n; i++) free(words[i]);
        free(words);
        return -1;
    }
    free(words[0]);
    words[0] = prog0;
    out->type = SR__TASK_EXEC;
    out->path = prog;
    out->argv = words;
    out->argc = n;
    return 0;
}

/* Whether `v` names a C, C++ or CUDA source file rather than the task built from it. */
static int is_source_file(const char *v) {
    static const char *const ext[] = {".c", ".cc", ".cpp", ".cxx", ".cu", ".h", NULL};
    const char *dot = strrchr(v, '.');
    if (!dot || strchr(dot, '/')) return 0;
    for (int i = 0; ext[i]; i++)
        if (!strcmp(dot, ext[i])) return 1;
    return 0;
}

static char *find_task_so(sr__job *cfg, const sr__setting *s, char *tried, size_t tried_len) {
    const char *v = s->value;
    if (strchr(v, '/') || (strlen(v) > 3 && !strcmp(v + strlen(v) - 3, ".so"))) {
        char *p = relative_to(s, cfg, v);
        snprintf(tried, tried_len, "\n    %s%s", p ? p : v, p ? "" : " (out of memory for its full path)");
        if (p && access(p, R_OK) == 0) return p;
        free(p);
        return NULL;
    }
    char **dirs = sr__split_path(sr__config_value(cfg, "shardrun", "tasks_path"));
    size_t n = 0, used = 0;
    while (dirs && dirs[n]) n++;
    char **g = dirs ? sr__realloc(dirs, (n + 3) * sizeof *dirs) : NULL;
    /* out of memory: found nowhere (or not looked everywhere), and the list of places says so */
    static const char oom[] = "\n    (out of memory: not every folder could be tried)";
    if (!g) {
        sr__free_strv(dirs);
        snprintf(tried, tried_len, "%s", oom);
        return NULL;
    }
    g[n] = sr__fmt("%s/examples", sr__lib_dir());
    g[n + 1] = g[n] ? sr__fmt("%s/shardrun/tasks", sr__lib_dir()) : NULL;
    g[n + 2] = NULL;
    if (!g[n + 1]) used += (size_t)snprintf(tried, tried_len, "%s", oom);
    dirs = g;
    char *found = NULL;
    for (char **d = dirs; *d && !found; d++) {
        char *cand = sr__fmt("%s/%s.so", *d, v);
        if (!cand) {
            if (used < tried_len) used += (size_t)snprintf(tried + used, tried_len - used, "\n    (out of memory)");
            break;
        }
        if (access(cand, R_OK) == 0) {
            found = cand;
        } else {
            if (used < tried_len) used += (size_t)snprintf(tried + used, tried_len - used, "\n    %s", cand);
            free(cand);
        }
    }
    sr__free_strv(dirs);
    return found;
}

int sr__task_spec_resolve(sr__job *cfg, int nextra, char *const *extra, sr__task_spec *out) {
    memset(out, 0, sizeof *out);
    const sr__setting *s = sr__config_get(cfg, "shardrun", "task");
    if (!s || !s->value) {
        sr__diag_add(&cfg->diag,
                     "%s: [shardrun] task is not set; add `task = path/to/task.so` or "
                     "`task = exec:PROGRAM ARGS...`",
                     cfg->path);
        return -1;
    }
    if (!strncmp(s->value, "exec:", 5)) {
        if (resolve_exec(cfg, s, out) != 0) return -1;
    } else {
        char tried[4096] = "";
        if (is_source_file(s->value)) {
            sr__diag_add(
                &cfg->diag,
                "%s: task = %s is a source file; a task is the shared object built from it: build "
                "it first, e.g. `cc -std=c11 -fPIC -shared -fvisibility=hidden $(pkg-config --cflags shardrun) "
                "-o %.*s.so %s $(pkg-config --libs shardrun)` (or shardrun_task() in CMake, docs/sdk.md), "
                "then set task = %.*s.so",
                s->where, s->value, (int)(strrchr(s->value, '.') - s->value), s->value, s->value,
                (int)(strrchr(s->value, '.') - s->value), s->value);
            return -1;
        }
        char *path = find_task_so(cfg, s, tried, sizeof tried);
        if (!path) {
            sr__diag_add(&cfg->diag,
                         "%s: task \"%s\" not found; tried:%s\n  build it, fix the path (relative to "
                         "the job file), or add its folder to SHARDRUN_TASKS_PATH",
                         s->where, s->value, tried);
            return -1;
        }
        /* abi_version, struct_size, kind: the head of sr_task */
        uint32_t head[3];
        char err[1024];
        if (sr__elf_peek_symbol(path, SR_TASK_SYMBOL, head, sizeof head, err, sizeof err) != 0) {
            sr__diag_add(&cfg->diag,
                         "%s: task %s: %s; a task defines its entry with SR_MAIN_TASK(name, fn) "
                         "from shardrun/task.h",
                         s->where, path, err);
            free(path);
            return -1;
        }
        /* append-only growth (base/abi.h): a larger sr_task of the same ABI version is read up to
           what this shardrun knows */
        if (head[0] > SR_TASK_ABI_VERSION) {
            sr__diag_add(&cfg->diag,
                         "%s: task %s was built against a newer shardrun (task ABI version %u) than this "
                         "one (version %u): upgrade shardrun, or rebuild the task against this shardrun's headers",
                         s->where, path, head[0], SR_TASK_ABI_VERSION);
            free(path);
            return -1;
        }
        if (head[0] != SR_TASK_ABI_VERSION || !SR__REACHES(sr_task, head[1], model)) {
            sr__diag_add(&cfg->diag,
                         "%s: task %s was built against an older shardrun (task ABI version %u, a %u-byte "
                         "sr_task) than this one (version %u, %zu bytes): rebuild it against this shardrun's headers "
                         "(include/shardrun/task.h)",
                         s->where, path, head[0], head[1], SR_TASK_ABI_VERSION,
                         offsetof(sr_task, model) + sizeof(((sr_task *)0)->model));
            free(path);
            return -1;
        }
        if (head[2] != SR_TASK_MAIN && head[2] != SR_TASK_MODEL) {
            sr__diag_add(&cfg->diag,
                         "%s: task %s is of kind %u, which this shardrun cannot run (1: main task, "
                         "2: model task)",
                         s->where, path, head[2]);
            free(path);
            return -1;
        }
        if (sr__task_probe_load(path, err, sizeof err) != 0) {
            sr__diag_add(&cfg->diag,
                         "%s: task %s cannot be loaded: %s; nothing was started (rebuild it, or link the "
                         "library that defines what is missing)",
                         s->where, path, err);
            free(path);
            return -1;
        }
        out->type = SR__TASK_SO;
        out->kind = head[2];
        out->path = path;
        out->argv = sr__calloc(2, sizeof *out->argv);
        if (out->argv && !(out->argv[0] = sr__strdup(path))) free(out->argv), out->argv = NULL;
        out->argc = out->argv ? 1 : 0;
    }
    char **argv = out->argv ? sr__realloc(out->argv, (size_t)(out->argc + nextra + 1) * sizeof *out->argv) : NULL;
    if (argv) out->argv = argv;
    for (int i = 0; argv && i < nextra; i++)
        if (!(argv[out->argc] = sr__strdup(extra[i]))) argv = NULL;
        else out->argc++;
    if (!argv) {
        sr__diag_add(&cfg->diag, "out of memory for the task's arguments (%d of them)", nextra + 1);
        return -1; /* the caller frees out (sr__task_spec_free) */
    }
    out->argv[out->argc] = NULL;
    return 0;
}

int sr__task_spec_check_trainer_keys(sr__job *cfg) {
    int bad = 0;
    for (const sr_key *k = sr__trainer_keys; k->name; k++) {
        sr__setting *s = sr__config_get(cfg, "task", k->name);
        char *norm = NULL, err[256];
        if (!s || !s->value) continue;
        if (sr__value_normalize(k, s->value, &norm, err, sizeof err) != 0) {
            sr__diag_add(&cfg->diag, "%s: [task] %s = \"%s\": %s (a trainer argument of this model task)", s->where,
                         k->name, s->value, err);
            bad = 1;
        }
        free(norm);
    }
    return bad ? -1 : 0;
}

void sr__task_spec_free(sr__task_spec *t) {
    for (int i = 0; i < t->argc; i++) free(t->argv[i]);
    free(t->argv);
    free(t->path);
    memset(t, 0, sizeof *t);
}
