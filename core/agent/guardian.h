/*
 * The guardian: a small process the agent forks before its workers, which outlives it.  Workers
 * die with the agent (PR_SET_PDEATHSIG), but what a task started in the background (an exec:
 * script's `sleep 300 &`, a data loader's helpers) lives in the worker's process group and would
 * be left running if the agent were killed outright (SIGKILL, an OOM kill).  The guardian learns
 * each worker's process group as it starts; when the agent goes away without releasing it, it
 * kills those groups, then exits.
 *
 * Lifecycle (agent): sr__guardian_start() before the first worker -> sr__guardian_watch(pgid) for
 * each worker -> sr__guardian_release() once the agent has stopped every group itself (the
 * guardian exits without killing anything).  Workers close the guardian's descriptor
 * (sr__guardian_fd) right after fork.
 */
#ifndef SR__AGENT_GUARDIAN_H
#define SR__AGENT_GUARDIAN_H

#include <sys/types.h>

/* 0, or -1 with errno (the run goes on without one: nothing else depends on it). */
int sr__guardian_start(void);
void sr__guardian_watch(pid_t pgid);
void sr__guardian_release(void);
/* The agent's end of the guardian's pipe, or -1. */
int sr__guardian_fd(void);

#endif
