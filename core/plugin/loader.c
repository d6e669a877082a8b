#define _GNU_SOURCE
#include "plugin/loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/abi.h"
#include "base/alloc.h"
#include "base/lib_dir.h"
#include "base/strbuf.h"
#include "config/value.h"

/* Appends s (taken) to the NULL-terminated *v.  0, or -1 when out of memory (s freed). */
static int strv_push(char ***v, size_t *n, char *s) {
    char **g = sr__realloc(*v, (*n + 2) * sizeof **v);
    if (!g) {
        free(s);
        return -1;
    }
    *v = g;
    g[(*n)++] = s;
    g[*n] = NULL;
    return 0;
}

char **sr__split_path(const char *list) {
    char **v = NULL;
    size_t n = 0;
    if (strv_push(&v, &n, NULL) != 0) return NULL; /* an empty, terminated array */
    n = 0;
    if (!list) return v;
    const char *p = list;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char *one = len ? sr__strndup(p, len) : NULL;
        if (len && (!one || strv_push(&v, &n, one) != 0)) {
            sr__free_strv(v);
            return NULL;
        }
        if (!colon) break;
        p = colon + 1;
    }
    return v;
}

void sr__free_strv(char **v) {
    for (char **p = v; p && *p; p++) free(*p);
    free(v);
}

char **sr__plugin_dirs(const char *extra) {
    char **v = sr__split_path(extra);
    size_t n = 0;
    while (v && v[n]) n++;
    char *a = v ? sr__fmt("%s/plugins", sr__lib_dir()) : NULL,
         *b = a ? sr__fmt("%s/shardrun/plugins", sr__lib_dir()) : NULL;
    int ok = b && strv_push(&v, &n, a) == 0;
    if (!b) free(a);
    if (!ok || strv_push(&v, &n, b) != 0) { /* strv_push freed what it failed to take */
        if (!ok) free(b);
        sr__free_strv(v);
        return NULL;
    }
    return v;
}

static int check_abi(const sr_plugin *p, const char *name, const char *path, sr__diag *diag) {
    if (p->abi_version != SR_PLUGIN_ABI_VERSION) {
        sr__diag_add(diag,
                     "plugin \"%s\" (%s) was built for plugin ABI version %u, but this shardrun speaks "
                     "version %u; rebuild the plugin against this shardrun's include/shardrun/plugin.h",
                     name, path, p->abi_version, SR_PLUGIN_ABI_VERSION);
        return -1;
    }
    /* append-only growth (base/abi.h): every field up to `finish` is read */
    if (!SR__REACHES(sr_plugin, p->struct_size, finish)) {
        sr__diag_add(diag,
                     "plugin \"%s\" (%s) declares ABI version %u with a %u-byte sr_plugin, but this "
                     "shardrun's is %zu bytes (a larger one, from a newer header, would do); rebuild the plugin "
                     "against this shardrun's headers",
                     name, path, p->abi_version, p->struct_size, offsetof(sr_plugin, finish) + sizeof p->finish);
        return -1;
    }
    if (!p->name || strcmp(p->name, name) != 0) {
        sr__diag_add(diag,
                     "plugin file %s calls itself \"%s\", but the job file asked for \"%s\"; fix the "
                     "`path` of [%s] or the plugins list",
                     path, p->name ? p->name : "(null)", name, name);
        return -1;
    }
    for (const sr_key *k = p->keys; k && k->name; k++)
        if (strcmp(k->name, "path") == 0) {
            sr__diag_add(diag, "plugin \"%s\" (%s) declares the key \"path\", which is shardrun's own", name, path);
            return -1;
        }
    return 0;
}

/* The plugin names the folders hold (shardrun_NAME.so), for a suggestion. */
static char **available(char *const *dirs) {
    char **v = NULL;
    size_t n = 0;
    if (strv_push(&v, &n, NULL) != 0) return NULL; /* out of memory: no suggestion */
    n = 0;
    for (char *const *d = dirs; *d; d++) {
        DIR *dir = opendir(*d);
        struct dirent *de;
        while (dir && (de = readdir(dir))) {
            size_t l = strlen(de->d_name);
            char *one = l > 12 && !strncmp(de->d_name, "shardrun_", 9) && !strcmp(de->d_name + l - 3, ".so")
                            ? sr__strndup(de->d_name + 9, l - 12)
                            : NULL;
            if (one) strv_push(&v, &n, one); /* a name that finds no memory is only not suggested */
        }
        if (dir) closedir(dir);
    }
    return v;
}

int sr__plugin_load(const char *name, const char *explicit_path, char *const *dirs, const char *where,
                    sr__loaded_plugin *out, sr__diag *diag) {
    memset(out, 0, sizeof *out);
    char *found = NULL;
    if (explicit_path) {
        if (access(explicit_path, R_OK) != 0) {
            sr__diag_add(diag, "plugin \"%s\": its path %s cannot be read (%s); fix `path` in [%s]", name,
                         explicit_path, strerror(errno), name);
            return -1;
        }
        found = sr__strdup(explicit_path);
        if (!found) {
            sr__diag_add(diag, "plugin \"%s\": out of memory for its path %s", name, explicit_path);
            return -1;
        }
    } else {
        char tried[4096] = "";
        size_t used = 0;
        for (char *const *d = dirs; *d && !found; d++) {
            char *cand = NULL;
            if (!(cand = sr__fmt("%s/shardrun_%s.so", *d, name))) {
                sr__diag_add(diag, "plugin \"%s\": out of memory looking for it in %s", name, *d);
                return -1;
            }
            if (access(cand, R_OK) == 0) {
                found = cand;
            } else {
                if (used < sizeof tried) used += (size_t)snprintf(tried + used, sizeof tried - used, "\n    %s", cand);
                free(cand);
            }
        }
        if (!found) {
            char **have = available(dirs), suggest[300] = "";
            size_t nhave = 0;
            while (have && have[nhave]) nhave++;
            /* plugin names are short: only a near miss is worth suggesting */
            const char *best = have ? sr__closest(name, (const char *const *)have, nhave) : NULL;
            if (best && sr__edit_distance(name, best) <= 2)
                snprintf(suggest, sizeof suggest, " (did you mean \"%s\"?)", best);
            sr__diag_add(diag,
                         "%s%splugin \"%s\" not found%s; tried:%s\n  set `path = ...` in [%s], or add its folder "
                         "to plugin_path (or SHARDRUN_PLUGIN_PATH)",
                         where ? where : "", where ? ": " : "", name, suggest, tried, name);
            sr__free_strv(have);
            return -1;
        }
    }
    dlerror();
    void *h = dlopen(found, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        sr__diag_add(diag, "plugin \"%s\": cannot load %s: %s", name, found, dlerror());
        free(found);
        return -1;
    }
    const sr_plugin *p = dlsym(h, SR_PLUGIN_SYMBOL);
    if (!p) {
        sr__diag_add(diag,
                     "plugin \"%s\": %s does not export the symbol \"%s\"; a plugin defines "
                     "`const sr_plugin %s = {...}` (include/shardrun/plugin.h)",
                     name, found, SR_PLUGIN_SYMBOL, SR_PLUGIN_SYMBOL);
        dlclose(h);
        free(found);
        return -1;
    }
    if (check_abi(p, name, found, diag) != 0) {
        dlclose(h);
        free(found);
        return -1;
    }
    out->name = sr__strdup(name);
    if (!out->name) {
        sr__diag_add(diag, "plugin \"%s\": out of memory for its name", name);
        dlclose(h);
        free(found);
        return -1;
    }
    out->path = found;
    out->handle = h;
    out->p = p;
    return 0;
}

void sr__plugins_check_set(const sr__loaded_plugin *ps, size_t n, sr__diag *diag) {
    for (size_t i = 0; i < n; i++) {
        const char *req = ps[i].p->requires;
        while (req && *req) {
            const char *comma = strchr(req, ',');
            size_t len = comma ? (size_t)(comma - req) : strlen(req);
            int ok = 0;
            for (size_t j = 0; j < n && !ok; j++) ok = strlen(ps[j].name) == len && !strncmp(ps[j].name, req, len);
            if (!ok)
                sr__diag_add(diag,
                             "plugin \"%s\" requires the plugin \"%.*s\", which is not listed; use "
                             "plugins = %.*s,%s",
                             ps[i].name, (int)len, req, (int)len, req, ps[i].name);
            req = comma ? comma + 1 : NULL;
        }
    }
}

void sr__plugin_unload(sr__loaded_plugin *p) {
    /* The handle stays open: hooks may have registered atexit handlers or left threads. */
    free(p->name);
    free(p->path);
    memset(p, 0, sizeof *p);
}
