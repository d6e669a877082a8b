/*
 * The one logging path and the exit codes, for every part of the runtime.
 *
 * Lifecycle: the agent sets sr__log_level from [shardrun] log_level before it forks, so every
 * worker inherits it -> any part of the runtime (agent, worker, FSDP engine, trainer) reports with
 * sr__log(): one line "shardrun: error: ..." on stderr, written with one write so that a worker's
 * lines reach the agent's relay whole.
 *
 * The rule: the layers below the run (base, config, store, io, device, pg) never print and never
 * exit; they fill an error buffer (char *err, size_t errlen) or a diag list and return -1.  The
 * runtime above them (fsdp, trainer, run, worker, agent) logs what went wrong and decides the
 * exit code, one of the SR__EXIT_* below.
 */
#ifndef SR__BASE_LOG_H
#define SR__BASE_LOG_H

#include <stdarg.h>

#include "shardrun/plugin.h" /* sr_log_level: SR_LOG_ERROR .. SR_LOG_DEBUG */

/* What shardrun and its workers exit with, as shells and torchrun users expect. */
enum {
    SR__EXIT_OK = 0,            /* every rank succeeded */
    SR__EXIT_FAILED = 1,        /* the run failed: a rank exited non-zero or died, on any node */
    SR__EXIT_CONFIG = 2,        /* bad input (job file, flag, variable, plugin, task), found before any work */
    SR__EXIT_CANNOT_EXEC = 127, /* an exec: task's program could not be started (as a shell says) */
    SR__EXIT_SIGNAL_BASE = 128  /* + N: shardrun was stopped by signal N (130 for Ctrl-C) */
};

/* Messages above this level are dropped (SR_LOG_INFO unless [shardrun] log_level says otherwise). */
extern int sr__log_level;

/* "shardrun: error: <message>" (warning:, nothing for info, debug:) on stderr. */
void sr__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same, for a named speaker: "shardrun torch: error: ..." (plugins through the host API). */
void sr__vlog_as(int level, const char *who, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

#endif
