/* The [shardrun] section, typed (config/shardrun_settings.h). */
#include "config/shardrun_settings.h"

#include <math.h>

#include "config/enums.h"
#include "config/value.h"

sr_log_level sr__shardrun_log_level(sr__job *cfg) {
    const char *v = sr__config_value(cfg, "shardrun", "log_level");
    int i = v ? sr__enum_index(SR__LOG_LEVEL_CHOICES, 0, v) : -1;
    return i >= 0 ? (sr_log_level)i : SR_LOG_INFO; /* the key's default */
}

/* A duration: a number of seconds, not negative. */
static double seconds(sr__job *cfg, const char *key) {
    const char *v = sr__config_value(cfg, "shardrun", key);
    double d = NAN;
    if (v && sr__parse_float(v, &d) != 0) d = NAN;
    if (!(d >= 0) || d > 1e9)
        sr__diag_add(&cfg->diag, "%s: %s = %s: expected a number of seconds from 0 to 1e9",
                     sr__config_get(cfg, "shardrun", key)->where, key, v ? v : "");
    return d;
}

/* An integer key: its range is the key table's, checked when the section was resolved. */
static int whole(sr__job *cfg, const char *key) {
    const char *v = sr__config_value(cfg, "shardrun", key);
    long long n = 0;
    if (v && sr__parse_int(v, &n) != 0) n = 0;
    return (int)n;
}

void sr__shardrun_settings_read(sr__job *cfg, sr__shardrun_settings *s) {
    s->log_level = sr__shardrun_log_level(cfg);
    s->shutdown_grace = seconds(cfg, "shutdown_grace");
    s->preempt_grace = seconds(cfg, "preempt_grace");
    s->restart_delay = seconds(cfg, "restart_delay");
    s->rdzv_timeout = seconds(cfg, "rdzv_timeout");
    s->rdzv_last_call = seconds(cfg, "rdzv_last_call");
    s->hang_timeout = seconds(cfg, "hang_timeout");
    s->max_restarts = whole(cfg, "max_restarts");
    s->metrics_port = whole(cfg, "metrics_port");
    /* its spelling was checked when the section was resolved */
    const char *join = sr__config_value(cfg, "shardrun", "elastic_join");
    int j = join ? sr__enum_index(SR__ELASTIC_JOIN_CHOICES, 0, join) : -1;
    s->elastic_join = j >= 0 ? (sr__elastic_join)j : SR__JOIN_NOW;
}
