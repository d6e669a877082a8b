#define _GNU_SOURCE
#include "cli/catalog.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "base/log.h"
#include "config/env_table.h"
#include "config/value.h"
#include "plugin/loader.h"
#include "trainer/train_args.h"

static const char *type_name(const sr_key *k, char *buf, size_t len) {
    switch (k->type) {
    case SR_KEY_STRING: return "string";
    case SR_KEY_BOOL: return "bool";
    case SR_KEY_INT:
        if (k->max == LLONG_MAX) snprintf(buf, len, "int >= %lld", k->min);
        else snprintf(buf, len, "int %lld..%lld", k->min, k->max);
        return buf;
    case SR_KEY_ENUM: sr__enum_describe(k->choices, k->flags, buf, len); return buf;
    case SR_KEY_LIST: return "list";
    case SR_KEY_PATH: return "path";
    case SR_KEY_PATH_LIST: return "paths";
    case SR_KEY_FLOAT: return "number";
    }
    return "?";
}

void sr__print_key_table(FILE *out, const char *section, const sr_key *keys, int md, int header) {
    char var[256], tbuf[512];
    if (md && header) {
        fprintf(out, "| key | override variable | final variable | type | default | meaning |\n");
        fprintf(out, "|---|---|---|---|---|---|\n");
    }
    for (const sr_key *k = keys; k && k->name; k++) {
        sr__key_env_name(section, k->name, var, sizeof var);
        const char *type = type_name(k, tbuf, sizeof tbuf);
        if (md)
            fprintf(out, "| `%s` | `%s` | %s%s%s | %s | %s%s%s | %s |\n", k->name, var, k->env ? "`" : "",
                    k->env ? k->env : "", k->env ? "`" : "", type, k->def && *k->def ? "`" : "",
                    k->def ? (*k->def ? k->def : "(empty)") : "(unset)", k->def && *k->def ? "`" : "", k->doc);
        else
            fprintf(out, "  %-34s %s\n  %-34s   %s; default %s%s%s\n", k->name, k->doc, "", type,
                    k->def ? (*k->def ? k->def : "(empty)") : "(unset)", k->env ? "; writes " : "",
                    k->env ? k->env : "");
    }
}

/* Every plugin found, loaded; *n set.  Files that fail to load are reported on stderr. */
static sr__loaded_plugin *find_all(const char *extra, size_t *n) {
    char **dirs = sr__plugin_dirs(extra);
    sr__loaded_plugin *ps = NULL;
    *n = 0;
    for (char **d = dirs; d && *d; d++) { /* dirs NULL: out of memory, none found */
        DIR *dir = opendir(*d);
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
            size_t len = strlen(e->d_name);
            if (strncmp(e->d_name, "shardrun_", 9) || len < 13 || strcmp(e->d_name + len - 3, ".so")) continue;
            char *name = sr__strndup(e->d_name + 9, len - 12);
            if (!name) {
                sr__log(SR_LOG_ERROR, "out of memory listing %s", *d);
                continue;
            }
            int seen = 0;
            for (size_t i = 0; i < *n && !seen; i++) seen = !strcmp(ps[i].name, name);
            sr__diag diag = {0};
            if (!seen) {
                sr__loaded_plugin *g = sr__realloc(ps, (*n + 1) * sizeof *ps);
                if (g) ps = g;
                else sr__log(SR_LOG_ERROR, "out of memory for the list of %zu plugins", *n + 1);
                char *path = g ? sr__fmt("%s/%s", *d, e->d_name) : NULL;
                if (g && !path) sr__log(SR_LOG_ERROR, "out of memory for the path of %s/%s", *d, e->d_name);
                if (path && sr__plugin_load(name, path, dirs, NULL, &ps[*n], &diag) == 0) (*n)++;
                free(path);
            }
            sr__diag_flush(&diag);
            free(name);
        }
        if (dir) closedir(dir);
    }
    sr__free_strv(dirs);
    return ps;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const sr__loaded_plugin *)a)->name, ((const sr__loaded_plugin *)b)->name);
}

int sr__cmd_plugins(const char *extra) {
    size_t n;
    sr__loaded_plugin *ps = find_all(extra, &n);
    if (n) qsort(ps, n, sizeof *ps, by_name);
    for (size_t i = 0; i < n; i++) {
        const sr_plugin *p = ps[i].p;
        printf("%s %s  (%s)\n  %s\n", p->name, p->version ? p->version : "", ps[i].path,
               p->description ? p->description : "");
        if (p->requires) printf("  requires: %s\n", p->requires);
        printf("  keys of [%s]:\n", p->name);
        sr__print_key_table(stdout, p->name, sr__plugin_host_keys, 0, 0);
        sr__print_key_table(stdout, p->name, p->keys, 0, 0);
        if (p->writes && p->writes->name) {
            printf("  also writes:\n");
            for (const sr_var *v = p->writes; v->name; v++) printf("    %-32s %s\n", v->name, v->doc);
        }
        printf("\n");
        sr__plugin_unload(&ps[i]);
    }
    if (!n) printf("no plugins found (set SHARDRUN_PLUGIN_PATH)\n");
    free(ps);
    return 0;
}

int sr__cmd_reference(void) {
    size_t n;
    sr__loaded_plugin *ps = find_all(NULL, &n);
    if (n) qsort(ps, n, sizeof *ps, by_name);
    printf("Every key has an override variable by one rule: `[shardrun] KEY` is `SHARDRUN_KEY`, "
           "`[SECTION] KEY` is `SHARDRUN_SECTION_KEY` (uppercase; `.` and `-` become `_`). A key with a "
           "*final variable* can also be overridden by exporting that variable itself. Precedence: command "
           "line > `SHARDRUN_*` > final variable > job file > default.\n\n");
    printf("#### `[shardrun]`\n\n");
    sr__print_key_table(stdout, "shardrun", sr__shardrun_keys, 1, 1);
    printf("\n#### `[task]`\n\nFree-form: every key is handed to the task (`sr_config()`); override with "
           "`--set task.KEY=V` or `SHARDRUN_TASK_KEY`. For a model task the trainer also reads these (checked "
           "before any worker starts), and a key that neither the task nor the trainer reads is an error "
           "naming its line (a misspelling, not a silent default):\n\n");
    sr__print_key_table(stdout, "task", sr__trainer_keys, 1, 1);
    for (size_t i = 0; i < n; i++) {
        const sr_plugin *p = ps[i].p;
        printf("\n#### `[%s]` — %s\n\n", p->name, p->description ? p->description : "");
        if (p->requires) printf("Requires: `%s`.\n\n", p->requires);
        sr__print_key_table(stdout, p->name, sr__plugin_host_keys, 1, 1);
        sr__print_key_table(stdout, p->name, p->keys, 1, 0);
        if (p->writes && p->writes->name) {
            printf("\nAlso written by `%s`, in every worker:\n\n| variable | value |\n|---|---|\n", p->name);
            for (const sr_var *v = p->writes; v->name; v++) printf("| `%s` | %s |\n", v->name, v->doc);
        }
        sr__plugin_unload(&ps[i]);
    }
    printf("\n#### Read by shardrun itself\n\n| variables | meaning |\n|---|---|\n");
    for (const sr_var *v = sr__host_reads; v->name; v++) printf("| `%s` | %s |\n", v->name, v->doc);
    free(ps);
    return 0;
}
