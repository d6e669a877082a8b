#define _GNU_SOURCE
#include "config/value.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"

int sr__parse_bool(const char *s, int *out) {
    static const char *const yes[] = {"y", "yes", "t", "true", "on", "1"};
    static const char *const no[] = {"n", "no", "f", "false", "off", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

int sr__parse_int(const char *s, long long *out) {
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (!isdigit((unsigned char)*p)) return -1;
    for (; *p; p++)
        if (!isdigit((unsigned char)*p)) return -1;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno) return -1;
    *out = v;
    return 0;
}

int sr__parse_float(const char *s, double *out) {
    char *end;
    if (!*s || isspace((unsigned char)*s)) return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

char *sr__fmt_double(double v, char *buf, size_t len) {
    if (!isfinite(v)) {
        snprintf(buf, len, "null");
        return buf;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

/* Walks the '|'-separated choices; calls back with each one's start and length. */
static int choice_at(const char *choices, int idx, const char **start, size_t *len) {
    const char *p = choices;
    for (int i = 0;; i++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (i == idx) {
            *start = p;
            *len = n;
            return 0;
        }
        if (!bar) return -1;
        p = bar + 1;
    }
}

static int choice_count(const char *choices) {
    int n = 1;
    for (const char *p = choices; *p; p++) n += *p == '|';
    return n;
}

int sr__enum_index(const char *choices, unsigned flags, const char *s) {
    int n = choice_count(choices);
    for (int i = 0; i < n; i++) {
        const char *c = "";
        size_t len = 0;
        choice_at(choices, i, &c, &len);
        if (strlen(s) == len && strncasecmp(s, c, len) == 0) return i;
    }
    if (flags & SR_KEY_ENUM_DIGITS) {
        long long v;
        if (sr__parse_int(s, &v) == 0 && s[0] != '+' && s[0] != '-' && v >= 1 && v <= n) return (int)v - 1;
    }
    return -1;
}

void sr__enum_choice(const char *choices, int idx, char *buf, size_t len) {
    const char *c;
    size_t n;
    if (choice_at(choices, idx, &c, &n) != 0) {
        snprintf(buf, len, "?");
        return;
    }
    snprintf(buf, len, "%.*s", (int)n, c);
}

void sr__enum_describe(const char *choices, unsigned flags, char *buf, size_t len) {
    size_t used = 0;
    int n = choice_count(choices);
    buf[0] = 0;
    for (int i = 0; i < n && used < len; i++) {
        const char *c = "";
        size_t cl = 0;
        choice_at(choices, i, &c, &cl);
        used += (size_t)snprintf(buf + used, len - used, "%s%.*s", i ? ", " : "", (int)cl, c);
    }
    if ((flags & SR_KEY_ENUM_DIGITS) && used < len) snprintf(buf + used, len - used, " (or 1-%d in that order)", n);
}

static char *join_list(const char *in, char *err, size_t errlen) {
    size_t n = strlen(in);
    char *out = sr__malloc(n + 1), *o = out;
    if (!out) return snprintf(err, errlen, "out of memory for a list of %zu bytes", n + 1), NULL;
    const char *p = in;
    int first = 1;
    while (1) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && isspace((unsigned char)*a)) a++;
        while (b > a && isspace((unsigned char)b[-1])) b--;
        if (a == b) {
            snprintf(err, errlen, "expected a comma-separated list without empty items, got \"%s\"", in);
            free(out);
            return NULL;
        }
        for (const char *q = a; q < b; q++)
            if (isspace((unsigned char)*q)) {
                snprintf(err, errlen, "list item \"%.*s\" contains a space", (int)(b - a), a);
                free(out);
                return NULL;
            }
        if (!first) *o++ = ',';
        memcpy(o, a, (size_t)(b - a));
        o += b - a;
        first = 0;
        if (!comma) break;
        p = comma + 1;
    }
    *o = 0;
    return out;
}

int sr__value_normalize(const sr_key *key, const char *in, char **out, char *err, size_t errlen) {
    char buf[512];
    *out = NULL;
    if (!*in) {
        snprintf(err, errlen, "expected a value, got an empty one (remove the key to use the default)");
        return -1;
    }
    switch (key->type) {
    case SR_KEY_BOOL: {
        int b;
        if (sr__parse_bool(in, &b) != 0) {
            snprintf(err, errlen, "expected a boolean (%s), got \"%s\"", SR__BOOL_SPELLINGS, in);
            return -1;
        }
        *out = sr__strdup(b ? "true" : "false");
        if (!*out) snprintf(err, errlen, "out of memory");
        return *out ? 0 : -1;
    }
    case SR_KEY_INT: {
        long long v, lo, hi;
        const char *colon = strchr(in, ':');
        if ((key->flags & SR__KEY_INT_RANGE) && colon) {
            char first[64];
            snprintf(first, sizeof first, "%.*s", (int)(colon - in < 63 ? colon - in : 63), in);
            if (colon - in > 62 || sr__parse_int(first, &lo) != 0 || sr__parse_int(colon + 1, &hi) != 0 ||
                lo < key->min || hi > key->max || lo > hi) {
                snprintf(err, errlen, "expected MIN:MAX, two integers from %lld to %lld with MIN <= MAX, got \"%s\"",
                         key->min, key->max, in);
                return -1;
            }
            snprintf(buf, sizeof buf, "%lld:%lld", lo, hi);
            *out = sr__strdup(buf);
            if (!*out) snprintf(err, errlen, "out of memory");
            return *out ? 0 : -1;
        }
        if (sr__parse_int(in, &v) != 0 || v < key->min || v > key->max) {
            if (key->flags & SR__KEY_INT_RANGE) {
                snprintf(err, errlen, "expected an integer from %lld to %lld, or MIN:MAX (an elastic job), got \"%s\"",
                         key->min, key->max, in);
                return -1;
            }
            snprintf(err, errlen, "expected an integer from %lld to %lld, got \"%s\"", key->min, key->max, in);
            return -1;
        }
        snprintf(buf, sizeof buf, "%lld", v);
        *out = sr__strdup(buf);
        if (!*out) snprintf(err, errlen, "out of memory");
        return *out ? 0 : -1;
    }
    case SR_KEY_FLOAT: {
        double v;
        if (sr__parse_float(in, &v) != 0 || v < 0) {
            snprintf(err, errlen, "expected a number >= 0, got \"%s\"", in);
            return -1;
        }
        *out = sr__strdup(in);
        if (!*out) snprintf(err, errlen, "out of memory");
        return *out ? 0 : -1;
    }
    case SR_KEY_ENUM: {
        int i = sr__enum_index(key->choices, key->flags, in);
        if (i < 0) {
            sr__enum_describe(key->choices, key->flags, buf, sizeof buf);
            snprintf(err, errlen, "expected one of %s, got \"%s\"", buf, in);
            return -1;
        }
        sr__enum_choice(key->choices, i, buf, sizeof buf);
        *out = sr__strdup(buf);
        if (!*out) snprintf(err, errlen, "out of memory");
        return *out ? 0 : -1;
    }
    case SR_KEY_LIST: *out = join_list(in, err, errlen); return *out ? 0 : -1;
    case SR_KEY_STRING:
    case SR_KEY_PATH:
    case SR_KEY_PATH_LIST:
        *out = sr__strdup(in);
        if (!*out) snprintf(err, errlen, "out of memory");
        return *out ? 0 : -1;
    }
    snprintf(err, errlen, "key has an unknown type %d", (int)key->type);
    return -1;
}

size_t sr__edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = sr__malloc((lb + 1) * sizeof *row);
    if (!row) return SIZE_MAX; /* out of memory: no suggestion */
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = diag + cost;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    size_t d = row[lb];
    free(row);
    return d;
}

const char *sr__closest(const char *word, const char *const *cands, size_t n) {
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = sr__edit_distance(word, cands[i]);
        /* a key that merely lacks or adds a prefix ("sharding_strategy") still counts as close */
        if (strstr(cands[i], word) || strstr(word, cands[i])) d = d < 3 ? d : 3;
        if (d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    size_t limit = strlen(word) / 3 + 2;
    return best_d <= limit ? best : NULL;
}

void sr__key_env_name(const char *section, const char *key, char *buf, size_t len) {
    size_t o = 0;
    const char *parts[2] = {strcmp(section, "shardrun") == 0 ? NULL : section, key};
    o += (size_t)snprintf(buf, len, "SHARDRUN_");
    for (int p = 0; p < 2; p++) {
        if (!parts[p]) continue;
        if (p == 1 && parts[0] && o + 1 < len) buf[o++] = '_';
        for (const char *c = parts[p]; *c && o + 1 < len; c++)
            buf[o++] = (*c == '.' || *c == '-') ? '_' : (char)toupper((unsigned char)*c);
    }
    buf[o < len ? o : len - 1] = 0;
}

int sr__valid_env_name(const char *name) {
    if (!name || !(isalpha((unsigned char)*name) || *name == '_')) return 0;
    for (const char *c = name; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_')) return 0;
    return 1;
}
