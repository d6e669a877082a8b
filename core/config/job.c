#define _GNU_SOURCE
#include "config/job.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <ini.h>
#include <pwd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/hash64.h"
#include "base/strbuf.h"
#include "config/env_table.h"
#include "config/value.h"

extern char **environ;

/* ---- the (section, key) index ----------------------------------------------------------------- */

static size_t key_hash(const char *section, const char *key) {
    /* FNV-1a over "section\xffkey" (0xff: no byte of a name) */
    uint64_t h = sr__fnv1a64_str(sr__fnv1a64(sr__fnv1a64_str(SR__FNV1A64_BASIS, section), "\xff", 1), key);
    return (size_t)(h ^ (h >> 32));
}

/* Whether entry i of an array (raw or set) is (section, key), and its names. */
typedef int (*entry_is)(const void *arr, size_t i, const char *section, const char *key);
typedef void (*entry_names)(const void *arr, size_t i, const char **section, const char **key);

/* The slot holding (section, key), or the empty slot where it would go (x->cap > 0). */
static size_t *index_slot(sr__key_index *x, const void *arr, entry_is same, const char *section, const char *key) {
    size_t m = x->cap - 1;
    for (size_t i = key_hash(section, key) & m;; i = (i + 1) & m)
        if (!x->slot[i] || same(arr, x->slot[i] - 1, section, key)) return &x->slot[i];
}

/* Position + 1 of (section, key) in the array, or 0. */
static size_t index_find(sr__key_index *x, const void *arr, entry_is same, const char *section, const char *key) {
    return x->cap ? *index_slot(x, arr, same, section, key) : 0;
}

/* Adds entry pos (one of n + 1 entries) to the index, growing it below half full.  -1 when out of
   memory (the index is then left as it was). */
static int index_add(sr__key_index *x, const void *arr, size_t n, entry_is same, entry_names names, size_t pos) {
    if (2 * (n + 1) > x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        while (2 * (n + 1) > cap) cap *= 2;
        sr__key_index g = {sr__calloc(cap, sizeof *g.slot), cap};
        if (!g.slot) return -1;
        for (size_t i = 0; i < x->cap; i++)
            if (x->slot[i]) {
                const char *sec, *key;
                names(arr, x->slot[i] - 1, &sec, &key);
                *index_slot(&g, arr, same, sec, key) = x->slot[i];
            }
        free(x->slot);
        *x = g;
    }
    const char *sec, *key;
    names(arr, pos, &sec, &key);
    *index_slot(x, arr, same, sec, key) = pos + 1;
    return 0;
}

static int raw_is(const void *arr, size_t i, const char *section, const char *key) {
    const sr__raw *r = (const sr__raw *)arr + i;
    return !strcmp(r->section, section) && !strcmp(r->key, key);
}
static void raw_names(const void *arr, size_t i, const char **section, const char **key) {
    const sr__raw *r = (const sr__raw *)arr + i;
    *section = r->section, *key = r->key;
}
static int set_is(const void *arr, size_t i, const char *section, const char *key) {
    const sr__setting *s = (const sr__setting *)arr + i;
    return !strcmp(s->section, section) && !strcmp(s->key, key);
}
static void set_names(const void *arr, size_t i, const char **section, const char **key) {
    const sr__setting *s = (const sr__setting *)arr + i;
    *section = s->section, *key = s->key;
}

/* Makes room for entry n of an array of `size`-byte entries (doubling).  0, or -1 out of memory. */
static int grow(void **arr, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return 0;
    size_t c = *cap ? 2 * *cap : 16;
    void *a = sr__realloc(*arr, c * size);
    if (!a) return -1;
    *arr = a, *cap = c;
    return 0;
}

/* ---- reading the file ---------------------------------------------------------------------- */

/* inih (Debian's build) neither passes line numbers to the handler nor handles lines longer than
   INI_MAX_LINE; we feed it through our own reader, which counts lines and refuses long ones. */
typedef struct reader_state {
    sr__job *cfg;
    const char *buf, *pos, *end;
    const char *cur; /* start of the line the handler is being called for */
    int line;        /* its number */
    int too_long;    /* line number of an over-long line, 0 if none */
    const char *last_section, *last_key;
    int last_line;
    int oom; /* line number where memory ran out (the handler stopped inih), 0 if none */
} reader_state;

static char *reader(char *str, int num, void *stream) {
    reader_state *st = stream;
    if (st->pos >= st->end) return NULL;
    const char *nl = memchr(st->pos, '\n', (size_t)(st->end - st->pos));
    size_t len = nl ? (size_t)(nl - st->pos) + 1 : (size_t)(st->end - st->pos);
    st->line++;
    if (len + 1 > (size_t)num) {
        st->too_long = st->line;
        return NULL;
    }
    memcpy(str, st->pos, len);
    str[len] = 0;
    st->cur = st->pos;
    st->pos += len;
    return str;
}

static const char *line_start(const reader_state *st, int line) {
    const char *p = st->buf;
    for (int l = 1; l < line && p < st->end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(st->end - p));
        if (!nl) return st->end;
        p = nl + 1;
    }
    return p;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
    reader_state *st = user;
    sr__job *cfg = st->cfg;
    const char *ls = st->cur;
    /* A continuation line (inih's multi-line value) starts with whitespace and repeats the key. */
    if (st->last_key && isspace((unsigned char)*ls) && strcmp(section, st->last_section) == 0 &&
        strcmp(name, st->last_key) == 0) {
        sr__raw *r = &cfg->raw[cfg->nraw - 1];
        char *joined = sr__fmt("%s %s", r->value, value);
        if (!joined) return st->oom = st->line, 0;
        free(r->value);
        r->value = joined;
        return 1;
    }
    if (!*section) {
        sr__diag_add(&cfg->diag,
                     "%s:%d: key \"%s\" is outside any section; put it under [shardrun], "
                     "[task] or a plugin's section",
                     cfg->path, st->line, name);
        return 1;
    }
    size_t at = index_find(&cfg->raw_idx, cfg->raw, raw_is, section, name);
    if (at) {
        sr__diag_add(&cfg->diag, "%s:%d: [%s] %s is given twice (first at line %d); keep one", cfg->path, st->line,
                     section, name, cfg->raw[at - 1].line);
        return 1;
    }
    if (grow((void **)&cfg->raw, &cfg->rawcap, cfg->nraw, sizeof *cfg->raw) != 0) return st->oom = st->line, 0;
    sr__raw *r = &cfg->raw[cfg->nraw];
    r->section = sr__strdup(section);
    r->key = sr__strdup(name);
    r->value = sr__strdup(value);
    r->line = st->line;
    r->used = 0;
    if (!r->section || !r->key || !r->value ||
        index_add(&cfg->raw_idx, cfg->raw, cfg->nraw, raw_is, raw_names, cfg->nraw) != 0) {
        free(r->section), free(r->key), free(r->value);
        return st->oom = st->line, 0; /* inih stops: reported as out of memory */
    }
    cfg->nraw++;
    st->last_section = r->section;
    st->last_key = r->key;
    return 1;
}

static const char *file_kind(mode_t m) {
    return S_ISDIR(m)    ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a pipe (FIFO)"
           : S_ISSOCK(m) ? "a socket"
                         : "a special file";
}

/* The whole job file, after checking it is a regular file of at most SR__JOB_FILE_MAX bytes (the
   read stops there too: the file may grow meanwhile).  NULL with the reason in cfg->diag. */
static char *read_job_file(sr__job *cfg, const char *path, size_t *len) {
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a pipe must not block the open */
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f && fd >= 0) close(fd);
    if (!f || fstat(fileno(f), &st) != 0) {
        sr__diag_add(&cfg->diag, "cannot read job file %s: %s; check the path (shardrun JOB.ini)", cfg->path,
                     strerror(errno));
        if (f) fclose(f);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        sr__diag_add(&cfg->diag, "job file %s is %s, not a regular file; give the job file itself (shardrun JOB.ini)",
                     cfg->path, file_kind(st.st_mode));
        fclose(f);
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0;
    long long size = (long long)st.st_size;
    if (size <= SR__JOB_FILE_MAX) {
        buf = sr__malloc((size_t)size + 2);
        if (!buf) {
            sr__diag_add(&cfg->diag, "out of memory for the job file %s (%lld bytes)", cfg->path, size + 2);
            fclose(f);
            return NULL;
        }
        n = fread(buf, 1, (size_t)size + 1, f); /* one more: a file that grew is noticed */
    }
    int bad = ferror(f);
    fclose(f);
    if (!bad && n > (size_t)size) size = SR__JOB_FILE_MAX + 1;
    if (bad || size > SR__JOB_FILE_MAX) {
        if (bad) sr__diag_add(&cfg->diag, "cannot read job file %s: a read error", cfg->path);
        else
            sr__diag_add(&cfg->diag,
                         "job file %s is larger than a job file may be (%lld bytes, 4 MiB): %lld bytes; "
                         "give the job file (JOB.ini), not a data file",
                         cfg->path, SR__JOB_FILE_MAX, (long long)st.st_size);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

int sr__config_load(sr__job *cfg, const char *path) {
    size_t len;
    cfg->path = sr__strdup(path);
    if (!cfg->path) {
        sr__diag_add(&cfg->diag, "out of memory for the job file's name (%zu bytes)", strlen(path) + 1);
        return -1;
    }
    char *abs = realpath(path, NULL);
    if (!abs)
        sr__diag_add(&cfg->diag, "cannot read job file %s: %s; check the path (shardrun JOB.ini)", path,
                     strerror(errno));
    char *buf = abs ? read_job_file(cfg, abs, &len) : NULL;
    if (!buf) {
        free(abs);
        cfg->dir = sr__strdup(".");
        return -1;
    }
    char *slash = strrchr(abs, '/');
    cfg->dir = sr__strndup(abs, slash && slash != abs ? (size_t)(slash - abs) : 1);
    free(abs);
    if (!cfg->dir) {
        sr__diag_add(&cfg->diag, "out of memory for the job file's folder (%zu bytes)", len);
        free(buf);
        return -1;
    }

    reader_state st = {.cfg = cfg, .buf = buf, .pos = buf, .end = buf + len};
    int rc = ini_parse_stream(reader, &st, handler, &st);
    if (st.oom) {
        sr__diag_add(&cfg->diag, "%s:%d: out of memory reading the job file", path, st.oom);
    } else if (st.too_long) {
        sr__diag_add(&cfg->diag,
                     "%s:%d: line longer than %d characters (the INI parser's limit); "
                     "continue a long value on the next line, indented",
                     path, st.too_long, INI_MAX_LINE - 2);
    } else if (rc > 0) {
        const char *ls = line_start(&st, rc), *le = memchr(ls, '\n', (size_t)(st.end - ls));
        int n = (int)((le ? le : st.end) - ls);
        sr__diag_add(&cfg->diag,
                     "%s:%d: syntax error: expected \"[section]\", \"key = value\" or a comment "
                     "(; or #), got \"%.*s\"",
                     path, rc, n > 80 ? 80 : n, ls);
    } else if (rc < 0) {
        sr__diag_add(&cfg->diag, "%s: the INI parser failed (out of memory)", path);
    }
    free(buf);
    return 0;
}

/* ---- overrides ----------------------------------------------------------------------------- */

void sr__config_add_override(sr__job *cfg, const char *section, const char *key, const char *value, const char *flag) {
    size_t cap = cfg->ncli; /* the array holds exactly ncli */
    sr__override o = {sr__strdup(section), sr__strdup(key), sr__strdup(value), sr__strdup(flag), 0};
    if (!o.section || !o.key || !o.value || !o.flag ||
        sr__grow((void **)&cfg->cli, &cap, cfg->ncli + 1, sizeof *cfg->cli) != 0) {
        free(o.section), free(o.key), free(o.value), free(o.flag);
        sr__diag_add(&cfg->diag, "out of memory for the setting %s (%s.%s)", flag, section, key);
        return;
    }
    cfg->cli[cfg->ncli++] = o;
}

int sr__config_add_set(sr__job *cfg, const char *spec) {
    const char *dot = strchr(spec, '.'), *eq = strchr(spec, '=');
    if (!dot || !eq || dot > eq || dot == spec || eq == dot + 1) return -1;
    char *section = sr__strndup(spec, (size_t)(dot - spec));
    char *key = sr__strndup(dot + 1, (size_t)(eq - dot - 1));
    char *flag = sr__fmt("--set %s", spec);
    if (!section || !key || !flag) sr__diag_add(&cfg->diag, "out of memory for the setting --set %s", spec);
    else sr__config_add_override(cfg, section, key, eq + 1, flag);
    free(section), free(key), free(flag);
    return 0;
}

/* ---- resolution ---------------------------------------------------------------------------- */

/* A new setting (section, key), indexed; NULL when memory ran out, after adding the error to
   cfg->diag (the run stops at its next check, before reading any setting of the section). */
static sr__setting *add_setting(sr__job *cfg, const char *section, const char *key) {
    if (grow((void **)&cfg->set, &cfg->setcap, cfg->nset, sizeof *cfg->set) != 0) goto oom;
    sr__setting *s = &cfg->set[cfg->nset];
    memset(s, 0, sizeof *s);
    s->section = sr__strdup(section);
    s->key = sr__strdup(key);
    if (!s->section || !s->key || index_add(&cfg->set_idx, cfg->set, cfg->nset, set_is, set_names, cfg->nset) != 0)
        goto oom;
    cfg->nset++;
    return s;
oom:
    if (cfg->nset < cfg->setcap) { /* the entry's copies, when it was reached */
        sr__setting *s = &cfg->set[cfg->nset];
        free(s->section), free(s->key);
        s->section = s->key = NULL;
    }
    sr__diag_add(&cfg->diag, "out of memory for the setting [%s] %s (%zu settings)", section, key, cfg->nset + 1);
    return NULL;
}

static const char *canonical(sr__key_normalizer norm, const char *key, char *buf, size_t len) {
    return norm ? norm(key, buf, len) : key;
}

/* The user's home folder ("/" as ""), or NULL when none is known. */
static const char *home_dir(void) {
    const char *home = getenv("HOME");
    if (!home || !*home) {
        const struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : NULL;
    }
    if (!home || !*home) return NULL;
    return strcmp(home, "/") ? home : "";
}

int sr__config_names_home(const char *p) { return p[0] == '~' && (!p[1] || p[1] == '/'); }

int sr__config_path_moves(const sr__job *cfg, const sr__setting *s) {
    if (!s->value || !*s->value) return 0;
    return sr__config_names_home(s->value) || (s->value[0] != '/' && s->from == SR__FROM_FILE && cfg->dir);
}

char *sr__config_absolute(const sr__job *cfg, sr__from from, const char *p) {
    /* "~" and "~/..." are under the user's home, as HF's TrainingArguments expands output_dir
       (os.path.expanduser): one job file shared between users, such as the shipped demos, names a
       folder of each user's own */
    const char *home = sr__config_names_home(p) ? home_dir() : NULL;
    if (home) return sr__fmt("%s%s", home, p + 1);
    if (p[0] == '/') return sr__strdup(p);
    char cwd[PATH_MAX];
    const char *base = from == SR__FROM_FILE ? cfg->dir : (getcwd(cwd, sizeof cwd) ? cwd : ".");
    char *out = NULL;
    out = sr__fmt("%s/%s", base, p);
    return out;
}

/* Each element of a colon-separated list through sr__config_absolute() (empty elements dropped). */
static char *absolute_list(const sr__job *cfg, sr__from from, const char *list) {
    sr__buf b = {0};
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ":");
        if (len) {
            char *one = sr__strndup(p, len), *a = one ? sr__config_absolute(cfg, from, one) : NULL;
            if (a) sr__buf_printf(&b, "%s%s", b.n ? ":" : "", a);
            else b.oom = 1;
            free(one), free(a);
        }
        p += len + (p[len] == ':');
    }
    if (b.oom) sr__buf_free(&b);
    return b.oom ? NULL : b.s ? b.s : sr__strdup("");
}

/* A setting's value or origin found no memory: a configuration error like any other. */
static void no_memory_for(sr__job *cfg, const char *section, const char *key) {
    sr__diag_add(&cfg->diag, "out of memory for the setting [%s] %s", section, key ? key : "");
}

static void resolve_one(sr__job *cfg, const char *section, const sr_key *k, sr__key_normalizer norm) {
    if (sr__config_get(cfg, section, k->name)) return; /* resolved ahead (a plugin's path) */
    sr__setting *s = add_setting(cfg, section, k->name);
    if (!s) return;
    const char *val = k->def;
    char where[600];
    char buf[256];
    int file_line = 0;
    s->from = SR__FROM_DEFAULT;
    snprintf(where, sizeof where, "default");

    for (size_t i = 0; i < cfg->nraw; i++) {
        sr__raw *r = &cfg->raw[i];
        if (strcmp(r->section, section) || strcmp(canonical(norm, r->key, buf, sizeof buf), k->name)) continue;
        if (s->from == SR__FROM_FILE) {
            sr__diag_add(&cfg->diag, "%s:%d: [%s] %s is the same key as \"%s\" on line %d; keep one", cfg->path,
                         r->line, section, r->key, k->name, file_line);
            continue;
        }
        r->used = 1;
        val = r->value;
        s->from = SR__FROM_FILE;
        file_line = r->line;
        snprintf(where, sizeof where, "%s:%d", cfg->path, r->line);
    }
    char var[256];
    const char *final_v = k->env ? getenv(k->env) : NULL;
    if (final_v) {
        val = final_v;
        s->from = SR__FROM_ENV;
        snprintf(where, sizeof where, "environment %s", k->env);
    }
    sr__key_env_name(section, k->name, var, sizeof var);
    const char *env_v = getenv(var);
    if (env_v) {
        val = env_v;
        s->from = SR__FROM_ENV;
        snprintf(where, sizeof where, "environment %s", var);
    }
    for (size_t i = 0; i < cfg->ncli; i++) {
        sr__override *o = &cfg->cli[i];
        if (strcmp(o->section, section) || strcmp(canonical(norm, o->key, buf, sizeof buf), k->name)) continue;
        o->used = 1;
        val = o->value;
        s->from = SR__FROM_CLI;
        snprintf(where, sizeof where, "command line %s", o->flag);
    }
    s->where = sr__strdup(where);
    if (!s->where) no_memory_for(cfg, section, k->name);
    if (!val) return;

    char err[512];
    char *norm_v = NULL;
    if (sr__value_normalize(k, val, &norm_v, err, sizeof err) != 0) {
        sr__diag_add(&cfg->diag, "%s: [%s] %s: %s", where, section, k->name, err);
        return;
    }
    if (k->type == SR_KEY_PATH) {
        char *a = sr__config_absolute(cfg, s->from, norm_v);
        free(norm_v);
        norm_v = a;
    } else if (k->type == SR_KEY_PATH_LIST) {
        char *a = absolute_list(cfg, s->from, norm_v);
        free(norm_v);
        norm_v = a;
    }
    if (!norm_v) no_memory_for(cfg, section, k->name);
    s->value = norm_v;
}

static int is_resolved_section(const sr__job *cfg, const char *section) {
    for (size_t i = 0; i < cfg->nsections; i++)
        if (strcmp(cfg->sections[i], section) == 0) return 1;
    return 0;
}

static void mark_section(sr__job *cfg, const char *section) {
    size_t cap = cfg->nsections; /* the array holds exactly nsections */
    char *copy = sr__strdup(section);
    if (!copy || sr__grow((void **)&cfg->sections, &cap, cfg->nsections + 1, sizeof *cfg->sections) != 0) {
        free(copy);
        sr__diag_add(&cfg->diag, "out of memory reading the job's [%s] section", section);
        return;
    }
    cfg->sections[cfg->nsections++] = copy;
}

static void unknown_key(sr__job *cfg, const char *section, const sr_key *keys, const sr_key *extra, const char *key,
                        const char *where) {
    const char *cands[256];
    size_t n = 0;
    for (const sr_key *k = keys; k && k->name && n < 255; k++) cands[n++] = k->name;
    if (extra) cands[n++] = extra->name;
    const char *best = sr__closest(key, cands, n);
    char hint[300] = "";
    if (best) snprintf(hint, sizeof hint, "; did you mean \"%s\"?", best);
    sr__diag_add(&cfg->diag, "%s: [%s] has no key \"%s\"%s (`shardrun plugins` lists every key)", where, section, key,
                 hint);
}

void sr__config_resolve(sr__job *cfg, const char *section, const sr_key *keys, const sr_key *extra_key,
                        sr__key_normalizer norm) {
    char buf[256], where[600];
    mark_section(cfg, section);
    for (const sr_key *k = keys; k && k->name; k++) resolve_one(cfg, section, k, norm);
    if (extra_key) resolve_one(cfg, section, extra_key, NULL);
    for (size_t i = 0; i < cfg->nraw; i++) {
        sr__raw *r = &cfg->raw[i];
        if (strcmp(r->section, section) || r->used) continue;
        const char *c = canonical(norm, r->key, buf, sizeof buf);
        if (sr__find_key(keys, c) || (extra_key && !strcmp(c, extra_key->name))) continue; /* duplicate */
        snprintf(where, sizeof where, "%s:%d", cfg->path, r->line);
        unknown_key(cfg, section, keys, extra_key, r->key, where);
    }
    for (size_t i = 0; i < cfg->ncli; i++) {
        sr__override *o = &cfg->cli[i];
        if (strcmp(o->section, section) || o->used) continue;
        o->used = 1;
        snprintf(where, sizeof where, "command line %s", o->flag);
        unknown_key(cfg, section, keys, extra_key, o->key, where);
    }
}

void sr__config_resolve_key(sr__job *cfg, const char *section, const sr_key *key) {
    resolve_one(cfg, section, key, NULL);
}

void sr__config_resolve_free(sr__job *cfg, const char *section) {
    char var[300];
    mark_section(cfg, section);
    for (size_t i = 0; i < cfg->nraw; i++) {
        sr__raw *r = &cfg->raw[i];
        if (strcmp(r->section, section)) continue;
        r->used = 1;
        sr__setting *s = add_setting(cfg, section, r->key);
        if (!s) continue;
        s->value = sr__strdup(r->value);
        s->from = SR__FROM_FILE;
        s->where = sr__fmt("%s:%d", cfg->path, r->line);
        if (!s->value || !s->where) no_memory_for(cfg, section, r->key);
    }
    /* SHARDRUN_<SECTION>_<KEY>: a key of the file, or a new one (lowercased) */
    char prefix[128];
    sr__key_env_name(section, "", prefix, sizeof prefix);
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t pl = strlen(prefix);
        if (!eq || strncmp(*e, prefix, pl) || (size_t)(eq - *e) == pl) continue;
        sr__setting *hit = NULL;
        for (size_t i = 0; i < cfg->nset && !hit; i++) {
            if (strcmp(cfg->set[i].section, section)) continue;
            sr__key_env_name(section, cfg->set[i].key, var, sizeof var);
            if ((size_t)(eq - *e) == strlen(var) && !strncmp(*e, var, strlen(var))) hit = &cfg->set[i];
        }
        if (!hit) {
            char *key = sr__strndup(*e + pl, (size_t)(eq - *e) - pl);
            if (!key) {
                no_memory_for(cfg, section, *e);
                continue;
            }
            for (char *c = key; *c; c++) *c = (char)tolower((unsigned char)*c);
            hit = add_setting(cfg, section, key);
            free(key);
            if (!hit) continue;
        }
        free(hit->value), free(hit->where);
        hit->value = sr__strdup(eq + 1);
        hit->from = SR__FROM_ENV;
        hit->where = sr__fmt("environment %.*s", (int)(eq - *e), *e);
        if (!hit->value || !hit->where) no_memory_for(cfg, section, hit->key);
    }
    for (size_t i = 0; i < cfg->ncli; i++) {
        sr__override *o = &cfg->cli[i];
        if (strcmp(o->section, section)) continue;
        o->used = 1;
        sr__setting *s = sr__config_get(cfg, section, o->key);
        if (!s) s = add_setting(cfg, section, o->key);
        if (!s) continue;
        free(s->value), free(s->where);
        s->value = sr__strdup(o->value);
        s->from = SR__FROM_CLI;
        s->where = sr__fmt("command line %s", o->flag);
        if (!s->value || !s->where) no_memory_for(cfg, section, o->key);
    }
}

void sr__config_check_leftovers(sr__job *cfg, const char *const *known, size_t nknown) {
    const char *last = NULL; /* a section's keys are consecutive unless it is opened twice */
    for (size_t i = 0; i < cfg->nraw; i++) {
        sr__raw *r = &cfg->raw[i];
        if ((last && !strcmp(last, r->section)) || is_resolved_section(cfg, r->section)) continue;
        last = r->section;
        /* report each unknown section once */
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(cfg->raw[j].section, r->section);
        if (seen) continue;
        const char *best = sr__closest(r->section, known, nknown);
        char hint[300] = "";
        if (best) snprintf(hint, sizeof hint, "; did you mean [%s]?", best);
        sr__diag_add(&cfg->diag,
                     "%s:%d: unknown section [%s]%s (sections are [shardrun], [task] and one "
                     "per plugin listed in plugins =)",
                     cfg->path, r->line, r->section, hint);
    }
    for (size_t i = 0; i < cfg->ncli; i++) {
        sr__override *o = &cfg->cli[i];
        if (o->used || is_resolved_section(cfg, o->section)) continue;
        sr__diag_add(&cfg->diag,
                     "command line %s: no section [%s] in this run (sections are [shardrun], "
                     "[task] and one per plugin listed in plugins =)",
                     o->flag, o->section);
    }
}

sr__setting *sr__config_get(sr__job *cfg, const char *section, const char *key) {
    size_t at = index_find(&cfg->set_idx, cfg->set, set_is, section, key);
    return at ? &cfg->set[at - 1] : NULL;
}

int sr__config_is_host_var(const char *name, size_t len) {
    for (const sr_var *v = sr__host_reads; v->name; v++) /* names: "A, B, C" */
        for (const char *p = v->name; *p;) {
            size_t n = strcspn(p, ", ");
            if (n == len && !strncmp(p, name, len)) return 1;
            p += n;
            p += strspn(p, ", ");
        }
    return 0;
}

const char *sr__config_value(sr__job *cfg, const char *section, const char *key) {
    sr__setting *s = sr__config_get(cfg, section, key);
    return s ? s->value : NULL;
}

void sr__config_free(sr__job *cfg) {
    for (size_t i = 0; i < cfg->nraw; i++) free(cfg->raw[i].section), free(cfg->raw[i].key), free(cfg->raw[i].value);
    for (size_t i = 0; i < cfg->ncli; i++)
        free(cfg->cli[i].section), free(cfg->cli[i].key), free(cfg->cli[i].value), free(cfg->cli[i].flag);
    for (size_t i = 0; i < cfg->nset; i++)
        free(cfg->set[i].section), free(cfg->set[i].key), free(cfg->set[i].value), free(cfg->set[i].where);
    for (size_t i = 0; i < cfg->nsections; i++) free(cfg->sections[i]);
    free(cfg->raw), free(cfg->cli), free(cfg->set), free(cfg->sections), free(cfg->path), free(cfg->dir);
    free(cfg->raw_idx.slot), free(cfg->set_idx.slot);
    sr__diag_clear(&cfg->diag); /* the run printed what mattered (config never prints) */
    memset(cfg, 0, sizeof *cfg);
}
