#define _GNU_SOURCE
#include "config/env_values.h"
#include "config/worker_settings.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* Whether v is a whole decimal number in [0, max] (leading digits only: no sign, no space). */
static int whole(const char *v, const char *end, long long max) {
    if (v == end) return 0;
    long long n = 0;
    for (const char *p = v; p < end; p++) {
        if (!isdigit((unsigned char)*p)) return 0;
        n = n * 10 + (*p - '0');
        if (n > max) return 0;
    }
    return 1;
}

/* RANK:STEP, followed by one of the suffixes (each with its ':'), or nothing. */
static int rank_step(const char *v, const char *const *suffixes) {
    const char *c = strchr(v, ':');
    if (!c || !whole(v, c, 1 << 30)) return 0;
    const char *s = c + 1, *e = strchr(s, ':');
    if (!e) return whole(s, s + strlen(s), 1000000000LL);
    if (!whole(s, e, 1000000000LL)) return 0;
    for (; suffixes && *suffixes; suffixes++)
        if (!strcmp(e + 1, *suffixes)) return 1;
    return 0;
}

/* SHARDRUN_DEBUG_PAUSE_AT: up to SR__PAUSE_MAX comma-separated RANK:STEP (the first attempt) or
   RANK:STEP@ATTEMPT. */
static int pause_list_ok(const char *v) {
    int n = 0;
    for (const char *p = v; *p; n++) {
        const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
        const char *c = memchr(p, ':', (size_t)(end - p)), *at = memchr(p, '@', (size_t)(end - p));
        if (n == SR__PAUSE_MAX || !c || !whole(p, c, 1 << 30) || !whole(c + 1, at ? at : end, 1000000000LL) ||
            (at && !whole(at + 1, end, 1000000)))
            return 0;
        p = comma ? comma + 1 : end;
        if (comma && !*p) return 0;
    }
    return 1;
}

#ifdef SR__ALLOC_FAULTS
/* PATH:LINE (base/alloc.h's sites): a path of at most 255 bytes, then a line number from 1. */
static int site_ok(const char *v) {
    const char *c = strrchr(v, ':');
    return c && c > v && c - v < 256 && whole(c + 1, c + strlen(c), 1 << 30) && strtol(c + 1, NULL, 10) > 0;
}
#endif

static const char *const KILL_SUFFIXES[] = {"every", "stop", NULL};

/* One variable's value: 1 when accepted.  An empty value is taken as unset, as its reader does. */
static int value_ok(const char *name, const char *v, const char **expected) {
    if (!strcmp(name, "SHARDRUN_PROFILE") || !strcmp(name, "SHARDRUN_DEBUG_OFFLOAD_STAGING")) {
        *expected = "0 or 1";
        return !*v || !strcmp(v, "0") || !strcmp(v, "1");
    }
    if (!strcmp(name, "SHARDRUN_DEBUG_PG_FAULT")) {
        *expected = "shm_reduce_scatter_index, gloo_avg_divisor or stop_in_collective";
        return !*v || !strcmp(v, "shm_reduce_scatter_index") || !strcmp(v, "gloo_avg_divisor") ||
               !strcmp(v, "stop_in_collective");
    }
    if (!strcmp(name, "SHARDRUN_DEBUG_SAVE_DELAY_MS")) {
        *expected = "milliseconds, a whole number from 0 to 3600000";
        return !*v || whole(v, v + strlen(v), 3600000);
    }
    if (!strcmp(name, "SHARDRUN_DEBUG_KILL_AT")) {
        *expected = "RANK:STEP, RANK:STEP:every or RANK:STEP:stop (whole numbers)";
        return !*v || rank_step(v, KILL_SUFFIXES);
    }
    if (!strcmp(name, "SHARDRUN_DEBUG_PAUSE_AT")) {
        *expected = "RANK:STEP or RANK:STEP@ATTEMPT (whole numbers), up to 4 separated by commas";
        return !*v || pause_list_ok(v);
    }
    if (!strcmp(name, "SHARDRUN_DEBUG_ALLOC_SITES") || !strcmp(name, "SHARDRUN_DEBUG_ALLOC_FAIL_SITE")) {
#ifdef SR__ALLOC_FAULTS
        if (!strcmp(name, "SHARDRUN_DEBUG_ALLOC_SITES")) return 1; /* a file name, any */
        *expected = "PATH:LINE, an allocation site as SHARDRUN_DEBUG_ALLOC_SITES writes them (core/run/run.c:88)";
        return !*v || site_ok(v);
#else
        /* a test that sets them here would pass without failing anything */
        *expected = "it unset: only a build configured with SHARDRUN_SANITIZE=ON records or fails allocations";
        return !*v;
#endif
    }
    return 1; /* not one of ours: check_stray_env (run/run.c) names unknown ones */
}

/* SHARDRUN_TASK_<KEY>: KEY a letter or digit, then letters, digits and '_' (lowercased, it is the
   [task] key). */
static int task_name_ok(const char *key, size_t len) {
    if (!len || !isalnum((unsigned char)key[0])) return 0;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)key[i]) && key[i] != '_') return 0;
    return 1;
}

void sr__env_values_check(sr__diag *diag) {
    static const char task[] = "SHARDRUN_TASK_";
    char name[128];
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || strncmp(*e, "SHARDRUN_", 9)) continue;
        size_t len = (size_t)(eq - *e);
        if (!strncmp(*e, task, sizeof task - 1) && !task_name_ok(*e + sizeof task - 1, len - (sizeof task - 1))) {
            sr__diag_add(diag,
                         "environment variable %.*s names no [task] key: expected SHARDRUN_TASK_<KEY>, KEY a letter "
                         "or digit and then letters, digits or '_' (SHARDRUN_TASK_LEARNING_RATE sets [task] "
                         "learning_rate); fix its name or unset it",
                         (int)len, *e);
            continue;
        }
        if (len >= sizeof name) continue;
        memcpy(name, *e, len);
        name[len] = 0;
        const char *expected = NULL;
        if (!value_ok(name, eq + 1, &expected))
            sr__diag_add(diag,
                         "environment variable %s=%s: expected %s (docs/environment.md); fix its value or unset it",
                         name, eq + 1, expected);
    }
}
