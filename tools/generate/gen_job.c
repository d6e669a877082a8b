/* gen job: a job file's [shardrun] task and [task] keys, for generation (see gen_job.h). */
#include "gen_job.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reading {
    gen_job *j;
    char dir[4096]; /* the job file's folder, "" for the current one */
    char bad[512];  /* the first value refused */
} reading;

/* value as a path: relative ones from the job file's folder */
static void path_into(const reading *r, const char *v, char *out, size_t len) {
    if (v[0] == '/' || !r->dir[0]) snprintf(out, len, "%s", v);
    else snprintf(out, len, "%s/%s", r->dir, v);
}

static int heads(reading *r, const char *key, const char *v, int *out) {
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 1 || n > 100000) {
        if (!r->bad[0]) snprintf(r->bad, sizeof r->bad, "[task] %s = %s: expected a positive whole number", key, v);
        return 1;
    }
    *out = (int)n;
    return 1;
}

static int handler(void *user, const char *section, const char *key, const char *v) {
    reading *r = user;
    gen_job *j = r->j;
    if (!strcmp(section, "shardrun") && !strcmp(key, "task")) {
        const char *base = strrchr(v, '/');
        base = base ? base + 1 : v;
        static const char *const families[] = {"gpt2", "bloom", "llama"};
        for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
            size_t n = strlen(families[i]);
            if (!strncmp(base, families[i], n) && (!base[n] || !strcmp(base + n, ".so")))
                snprintf(j->family, sizeof j->family, "%s", families[i]);
        }
        return 1;
    }
    if (strcmp(section, "task")) return 1;
    if (!strcmp(key, "size")) snprintf(j->size, sizeof j->size, "%s", v);
    else if (!strcmp(key, "config")) path_into(r, v, j->config, sizeof j->config);
    else if (!strcmp(key, "vocab_json")) path_into(r, v, j->vocab, sizeof j->vocab);
    else if (!strcmp(key, "merges_txt")) path_into(r, v, j->merges, sizeof j->merges);
    else if (!strcmp(key, "tokenizer_json")) path_into(r, v, j->tokenizer, sizeof j->tokenizer);
    else if (!strcmp(key, "n_head") || !strcmp(key, "num_attention_heads")) return heads(r, key, v, &j->n_head);
    else if (!strcmp(key, "num_key_value_heads")) return heads(r, key, v, &j->n_kv_head);
    static const char *const widths[] = {
        "n_layer", "n_embd", "n_positions", "hidden_size", "num_hidden_layers", "intermediate_size", "vocab_size"};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        if (!strcmp(key, widths[i])) j->resized = 1;
    return 1;
}

int gen_job_read(const char *path, const char *const *sets, int nsets, gen_job *j, char *err, size_t errlen) {
    memset(j, 0, sizeof *j);
    reading r = {.j = j};
    snprintf(r.dir, sizeof r.dir, "%s", path);
    char *slash = strrchr(r.dir, '/');
    if (slash) slash[slash == r.dir] = 0;
    else r.dir[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--job %s: %s; name the job file the model was trained with", path, strerror(errno));
        return -1;
    }
    int line = ini_parse_file(f, handler, &r);
    fclose(f);
    if (line != 0) {
        snprintf(err, errlen, "--job %s: line %d is not INI (a [section], key = value, or a ; comment)", path, line);
        return -1;
    }
    if (r.bad[0]) {
        snprintf(err, errlen, "--job %s: %s", path, r.bad);
        return -1;
    }
    r.dir[0] = 0; /* --set paths: from the current folder, as shardrun takes them */
    for (int i = 0; i < nsets; i++) {
        char section[64], key[256];
        const char *dot = strchr(sets[i], '.'), *eq = dot ? strchr(dot + 1, '=') : NULL;
        if (!dot || !eq || dot == sets[i] || eq == dot + 1 || (size_t)(dot - sets[i]) >= sizeof section ||
            (size_t)(eq - dot - 1) >= sizeof key) {
            snprintf(err, errlen,
                     "--set %s: expected SECTION.KEY=VALUE, as the training command took it "
                     "(--set task.size=gpt2)",
                     sets[i]);
            return -1;
        }
        snprintf(section, sizeof section, "%.*s", (int)(dot - sets[i]), sets[i]);
        snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
        handler(&r, section, key, eq + 1);
        if (r.bad[0]) {
            snprintf(err, errlen, "--set %s: %s", sets[i], r.bad);
            return -1;
        }
    }
    return 0;
}
