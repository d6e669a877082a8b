/*
 * selftest's sub-runs (see selftest.h): `shardrun JOB` in a child process, its output in a log.
 * Lifecycle: sr__selftest_catch_signals() once the temporary folder exists -> sr__selftest_subrun()
 * as often as needed, each refusing to start once sr__selftest_stopped() -> sr__selftest_restore_signals().
 */
#ifndef SR__AGENT_SELFTEST_SUBRUN_H
#define SR__AGENT_SELFTEST_SUBRUN_H

#include <signal.h>

/* Sub-runs: `shardrun JOB` with output to LOG, env_set (NAME=VALUE, or NULL) added to its
   environment.  Returns its exit code (128+N for a signal), or -1 when it could not start. */
int sr__selftest_subrun(const char *job, const char *log, const char *env_set, char *const *passthrough);
/* The signal that stopped the selftest (SIGINT, SIGTERM, SIGHUP during a sub-run), or 0. */
int sr__selftest_stopped(void);
/* The last lines of a log, indented, on stderr (what a failed sub-run said). */
void sr__selftest_show_log(const char *log);

/* SIGINT, SIGTERM, SIGHUP while a sub-run runs: handed on to it (it stops its workers as any run
   does), and no further sub-run starts.  old[3] keeps the dispositions to restore. */
void sr__selftest_catch_signals(struct sigaction old[3]);
void sr__selftest_restore_signals(const struct sigaction old[3]);

#endif
