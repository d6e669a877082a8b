/* adapter_config.json for shardrun merge (see merge_config.h). */
#define _GNU_SOURCE
#include "merge_config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "io/json.h"

/* the fields merge reads; each may appear once */
static const char *const used[] = {"peft_type",        "r",
                                   "lora_alpha",       "fan_in_fan_out",
                                   "use_rslora",       "target_modules",
                                   "exclude_modules",  "rank_pattern",
                                   "alpha_pattern",    "bias",
                                   "init_lora_weights"};
enum { F_PEFT, F_R, F_ALPHA, F_FIFO, F_RSLORA, F_TARGETS, F_EXCLUDES, F_RANKS, F_ALPHAS, F_BIAS, F_INIT, F_COUNT };
/* fields whose value cannot change a merge */
static const char *const ignored[] = {
    "task_type",    "base_model_name_or_path", "revision",      "inference_mode",    "auto_mapping", "peft_version",
    "lora_dropout", "runtime_config",          "megatron_core", "qalora_group_size", "loftq_config", "eva_config",
    "corda_config", "lora_ga_config"};
/* init_lora_weights that leave the base weights as they were (the others -- pissa, olora, corda,
   loftq, lora_ga, mica -- train the adapters on a changed base, or are another method) */
static const char *const plain_inits[] = {"gaussian", "eva", "orthogonal"};

typedef struct reader {
    const char *who, *doer, *path, *text;
    sr__json j;
} reader;

static int bad(const reader *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const reader *rd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: %s: ", rd->who, rd->path);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

static int oom(const reader *rd) { return bad(rd, "out of memory reading it"), 2; }

static int in(const char *const *list, size_t n, const char *key, size_t klen) {
    for (size_t i = 0; i < n; i++)
        if (sr__json_key_is(key, klen, list[i])) return (int)i;
    return -1;
}

/* The next value, skipped; its text in buf for messages: each run of line breaks and indentation
   one space, at most 80 characters. */
static int skip_text(reader *rd, char *buf, size_t len) {
    sr__json_peek(&rd->j);
    size_t at = sr__json_offset(&rd->j), o = 0;
    if (sr__json_skip(&rd->j) != 0) return -1;
    for (size_t i = at, end = sr__json_offset(&rd->j); i < end && o + 4 < len && o < 80; i++) {
        char ch = strchr("\t\r\n", rd->text[i]) ? ' ' : rd->text[i];
        if (ch != ' ' || !o || buf[o - 1] != ' ' || !strchr("\t\r\n ", rd->text[i - 1])) buf[o++] = ch;
    }
    if (o >= 80) memcpy(buf + o, "...", 3), o += 3;
    buf[o] = 0;
    return 0;
}

/* What PEFT writes for an option that is off: null, false, {} or [] (whitespace aside). */
static int is_off(const char *v) {
    char t[8];
    size_t n = 0;
    for (; *v && n < sizeof t - 1; v++)
        if (!strchr(" \t\r\n", *v)) t[n++] = *v;
    t[n] = 0;
    return !*v && (!strcmp(t, "null") || !strcmp(t, "false") || !strcmp(t, "{}") || !strcmp(t, "[]"));
}

/* 0 when the next value is of type t (or malformed: reading it then fails with the reader's error);
   else 2, after saying what `field` holds and that `what` was expected. */
static int want(reader *rd, sr__json_type t, const char *field, const char *what) {
    sr__json_type h = sr__json_peek(&rd->j);
    char v[100];
    if (h == t || h == SR__JSON_NONE) return 0;
    return skip_text(rd, v, sizeof v) != 0 ? -1 : bad(rd, "%s = %s: expected %s", field, v, what);
}

/* A string without NUL, copied; NULL (and *rc) when the value is no such string. */
static char *string_copy(reader *rd, const char *field, const char *what, int *rc) {
    const char *s;
    size_t n;
    char *c = NULL;
    if ((*rc = want(rd, SR__JSON_STRING, field, what)) != 0) return NULL;
    if (sr__json_string(&rd->j, &s, &n) != 0) *rc = -1;
    else if (strlen(s) != n) *rc = bad(rd, "%s: a string holds \\u0000", field);
    else if (!(c = sr__strdup(s))) *rc = oom(rd);
    return c;
}

/* target_modules / exclude_modules: null, a list of names, or an expression */
static int read_names(reader *rd, const char *field, sr__merge_names *o) {
    sr__json_type t = sr__json_peek(&rd->j);
    int rc = 0;
    char why[300];
    if (t == SR__JSON_NULL) return sr__json_null(&rd->j);
    o->set = 1;
    if (t == SR__JSON_STRING) {
        if (!(o->pattern = string_copy(rd, field, "a string", &rc))) return rc;
        if (!(o->re = sr__merge_re_compile(o->pattern, SR__MERGE_FULL, why, sizeof why)))
            return bad(rd,
                       "%s = \"%s\" is no regular expression: %s (a string is matched against the whole module "
                       "path, as Python's re.fullmatch; a list names modules)",
                       field, o->pattern, why);
        return 0;
    }
    if ((rc = want(rd, SR__JSON_ARRAY, field, "a list of module names, a pattern string or null")) != 0) return rc;
    if (sr__json_array(&rd->j) != 0) return -1;
    size_t cap = 0;
    int e;
    while ((e = sr__json_element(&rd->j)) > 0) {
        if (sr__grow((void **)&o->names, &cap, o->n + 1, sizeof *o->names) != 0) return oom(rd);
        if (!(o->names[o->n] = string_copy(rd, field, "module names (strings)", &rc))) return rc;
        o->n++;
    }
    return e < 0 ? -1 : 0;
}

/* rank_pattern (whole numbers >= 1) or alpha_pattern (numbers > 0): {"KEY": value, ...} or null */
static int read_patterns(reader *rd, const char *field, int whole, sr__merge_pattern **out, size_t *n) {
    if (sr__json_peek(&rd->j) == SR__JSON_NULL) return sr__json_null(&rd->j);
    int rc = want(rd, SR__JSON_OBJECT, field, "an object of module patterns and their values, or null");
    if (rc) return rc;
    if (sr__json_object(&rd->j) != 0) return -1;
    const char *key;
    size_t klen, cap = 0;
    int m;
    char why[300];
    while ((m = sr__json_member(&rd->j, &key, &klen)) > 0) {
        sr__json_num num;
        if (sr__grow((void **)out, &cap, *n + 1, sizeof **out) != 0) return oom(rd);
        sr__merge_pattern *p = &(*out)[*n];
        *p = (sr__merge_pattern){0};
        if (strlen(key) != klen) return bad(rd, "%s: a key holds \\u0000", field);
        if (!(p->key = sr__strdup(key))) return oom(rd);
        (*n)++;
        char what[300];
        snprintf(what, sizeof what, "%s[\"%.200s\"]", field, p->key);
        if ((rc = want(rd, SR__JSON_NUMBER, what, "a number")) != 0) return rc;
        if (sr__json_number(&rd->j, &num) != 0) return -1;
        p->value = num.value;
        if (whole ? !(num.is_uint && num.uint >= 1 && num.uint <= 1u << 20) : !(isfinite(num.value) && num.value > 0))
            return bad(rd, "%s[\"%s\"] = %g: expected %s", field, p->key, num.value,
                       whole ? "a whole number from 1 to 1048576 (the rank of that module's adapters)"
                             : "a finite number > 0 (that module's lora_alpha)");
        if (!(p->re = sr__merge_re_compile(p->key, SR__MERGE_SUFFIX, why, sizeof why)))
            return bad(rd,
                       "%s key \"%s\" is no regular expression: %s (PEFT matches each key as "
                       "re.match(r\"(.*\\.)?(KEY)$\", module path))",
                       field, p->key, why);
    }
    return m < 0 ? -1 : 0;
}

/* One member's value, the key known. */
static int read_member(reader *rd, sr__merge_cfg *c, int f, const char *field, char **peft) {
    sr__json_num num;
    char v[100];
    int rc = 0;
    switch (f) {
    case F_PEFT: return (*peft = string_copy(rd, field, "\"LORA\"", &rc)) ? 0 : rc;
    case F_R:
    case F_ALPHA:
        if ((rc = want(rd, SR__JSON_NUMBER, field, "a number")) != 0) return rc;
        if (sr__json_number(&rd->j, &num) != 0) return -1;
        if (f == F_R && !(num.is_uint && num.uint >= 1 && num.uint <= 1u << 20))
            return bad(rd, "r = %g: expected a whole number from 1 to 1048576 (the adapters' rank)", num.value);
        if (f == F_ALPHA && !(isfinite(num.value) && num.value > 0))
            return bad(rd, "lora_alpha = %g: expected a finite number > 0", num.value);
        *(f == F_R ? &c->r : &c->alpha) = num.value;
        return 0;
    case F_FIFO:
    case F_RSLORA:
        if ((rc = want(rd, SR__JSON_BOOL, field, "true or false")) != 0) return rc;
        return sr__json_bool(&rd->j, f == F_FIFO ? &c->fan_in_fan_out : &c->rslora) == 0 ? 0 : -1;
    case F_TARGETS:
    case F_EXCLUDES: return read_names(rd, field, f == F_TARGETS ? &c->targets : &c->excludes);
    case F_RANKS: return read_patterns(rd, field, 1, &c->ranks, &c->nranks);
    case F_ALPHAS: return read_patterns(rd, field, 0, &c->alphas, &c->nalphas);
    case F_BIAS:
        if (skip_text(rd, v, sizeof v) != 0) return -1;
        if (!strcmp(v, "\"none\"")) return 0;
        return bad(rd,
                   "bias = %s: these adapters come with trained biases of the base (PEFT's bias \"all\" or "
                   "\"lora_only\"), which shardrun does not fold in; merge them with PEFT "
                   "(PeftModel.from_pretrained(base, dir).merge_and_unload())",
                   v);
    default: /* F_INIT */
        if (skip_text(rd, v, sizeof v) != 0) return -1;
        if (!strcmp(v, "true") || !strcmp(v, "false")) return 0;
        for (size_t i = 0; i < sizeof plain_inits / sizeof *plain_inits; i++) {
            char q[40];
            snprintf(q, sizeof q, "\"%s\"", plain_inits[i]);
            if (!strcmp(v, q)) return 0;
        }
        return bad(rd,
                   "init_lora_weights = %s: that initialization trains the adapters on a changed base (PiSSA, "
                   "OLoRA, CorDA, LoftQ, LoRA-GA) or is another method (MiCA), so W + scale B A of the original "
                   "base is not the trained model; merge with PEFT, or convert the adapters first (PEFT's "
                   "path_initial_model_for_weight_conversion), which saves them with init_lora_weights true",
                   v);
    }
}

int sr__merge_cfg_read(const char *who, const char *doer, const char *path, sr__merge_cfg *c) {
    *c = (sr__merge_cfg){.r = 8, .alpha = 8}; /* LoraConfig's defaults */
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t n = 0;
    if (f) {
        FILE *m = open_memstream(&text, &n);
        char buf[8192];
        size_t got;
        while (m && (got = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, got, m);
        int e = ferror(f) ? errno : 0;
        if (!m || fclose(m) != 0 || e) free(text), text = NULL, errno = e ? e : ENOMEM;
        fclose(f);
    }
    if (!text) {
        fprintf(stderr,
                "%s: cannot read %s: %s; a checkpoint of a LoRA run (lora_r > 0, FULL_STATE_DICT) "
                "holds it next to adapter_model.safetensors, as PEFT's save_pretrained writes them\n",
                who, path, strerror(errno));
        return 2;
    }
    reader rd = {.who = who, .doer = doer, .path = path, .text = text};
    sr__json_init(&rd.j, text, n, NULL);
    rd.j.nonfinite = 1; /* Python's json writes NaN and Infinity: read, then refused by name */
    const char *key;
    size_t klen;
    char *peft = NULL, v[100];
    int m = 0, rc = sr__json_object(&rd.j), seen[F_COUNT] = {0};
    while (!rc && (m = sr__json_member(&rd.j, &key, &klen)) > 0) {
        int u = strlen(key) == klen ? in(used, F_COUNT, key, klen) : -1;
        char field[64];
        snprintf(field, sizeof field, "%.*s", (int)(klen < 60 ? klen : 60), key);
        if (u >= 0 && seen[u]++) rc = bad(&rd, "%s is given twice", field);
        else if (u >= 0) rc = read_member(&rd, c, u, field, &peft);
        else if (in(ignored, sizeof ignored / sizeof *ignored, key, klen) >= 0) rc = sr__json_skip(&rd.j);
        else if ((rc = skip_text(&rd, v, sizeof v)) == 0 && !is_off(v))
            rc = bad(&rd,
                     "%s = %s: %s does not do this (a PEFT option that changes the merged model, "
                     "such as modules_to_save, layers_to_transform, use_dora or lora_bias, or a field it does not "
                     "know); use these adapters with PEFT (PeftModel.from_pretrained(base, dir)). Fields it does "
                     "not use must be null, false, {} or []",
                     field, v, rd.doer);
    }
    if (rc < 0 || (!rc && (m < 0 || sr__json_end(&rd.j) != 0))) {
        size_t at = 0;
        const char *why = sr__json_error(&rd.j, &at);
        rc = bad(&rd, "not PEFT's adapter_config.json: %s at byte %zu", why ? why : "not a JSON object", at);
    }
    if (!rc && (!peft || strcmp(peft, "LORA")))
        rc = bad(&rd, "peft_type is %s%s%s: shardrun reads LoRA adapters (peft_type \"LORA\") only", peft ? "\"" : "",
                 peft ? peft : "missing", peft ? "\"" : "");
    if (!rc && !c->targets.set)
        rc = bad(&rd, "target_modules is null or missing: PEFT then adapts its defaults for the model type, which "
                      "merge cannot know; name the adapted modules, e.g. \"target_modules\": [\"c_attn\"]");
    free(peft);
    sr__json_free(&rd.j);
    free(text);
    if (rc) sr__merge_cfg_free(c);
    return rc;
}

static int names_match(const sr__merge_names *s, const char *module) {
    return s->re ? sr__merge_re_match(s->re, module) : sr__merge_name_in((const char *const *)s->names, s->n, module);
}

int sr__merge_cfg_targets(const sr__merge_cfg *c, const char *module) {
    int ex = c->excludes.set ? names_match(&c->excludes, module) : 0;
    return ex < 0 ? -1 : ex ? 0 : names_match(&c->targets, module);
}

static int first_key(const sr__merge_pattern *p, size_t n, const char *module, double *value, const char **key) {
    *key = NULL;
    for (size_t i = 0; i < n; i++) {
        int m = sr__merge_re_match(p[i].re, module);
        if (m < 0) return -1;
        if (m) {
            *value = p[i].value, *key = p[i].key;
            return 0;
        }
    }
    return 0;
}

int sr__merge_cfg_module(const sr__merge_cfg *c, const char *module, double *r, double *alpha, const char **rkey,
                         const char **akey) {
    *r = c->r, *alpha = c->alpha;
    return first_key(c->ranks, c->nranks, module, r, rkey) || first_key(c->alphas, c->nalphas, module, alpha, akey) ? -1
                                                                                                                    : 0;
}

double sr__merge_cfg_scale(const sr__merge_cfg *c, double r, double alpha) { return alpha / (c->rslora ? sqrt(r) : r); }

static void names_free(sr__merge_names *s) {
    for (size_t i = 0; i < s->n; i++) free(s->names[i]);
    free(s->names), free(s->pattern);
    sr__merge_re_free(s->re);
}

void sr__merge_cfg_free(sr__merge_cfg *c) {
    names_free(&c->targets), names_free(&c->excludes);
    for (size_t i = 0; i < c->nranks; i++) free(c->ranks[i].key), sr__merge_re_free(c->ranks[i].re);
    for (size_t i = 0; i < c->nalphas; i++) free(c->alphas[i].key), sr__merge_re_free(c->alphas[i].re);
    free(c->ranks), free(c->alphas);
    *c = (sr__merge_cfg){0};
}
