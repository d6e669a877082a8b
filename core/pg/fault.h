/* A testing aid: SHARDRUN_DEBUG_PG_FAULT puts one deliberate bug into a collective, so that the
   tests can prove `shardrun selftest` catches such a bug, fails in seconds and names it
   (tests/cli/selftest_faults.sh; docs/selftest.md).  The world's creation passes the
   variable's value (from the worker's settings, config/worker_settings.h) to sr__pg_fault_set();
   the backends ask sr__pg_fault() where the bug would be.  Unset (every real run) it answers
   SR__PG_FAULT_NONE and nothing changes.

     shm_reduce_scatter_index   the shm backend's reduce-scatter: ranks above 0 fold another
                                rank's slice (an index bug only ranks > 0 hit)
     gloo_avg_divisor           the gloo backend (TCP) divides averages by the group size + 1
     stop_in_collective         rank 1 stops itself (SIGSTOP) inside its 40th collective, after
                                entering it: the hang watchdog must name it though every rank
                                entered that collective (tests/hang/stop.sh) */
#ifndef SR__CORE_PG_FAULT_H
#define SR__CORE_PG_FAULT_H

enum { SR__PG_FAULT_NONE, SR__PG_FAULT_SHM_RS_INDEX, SR__PG_FAULT_GLOO_AVG_DIVISOR, SR__PG_FAULT_STOP_IN_COLLECTIVE };

/* The fault named (its variable's text; NULL or an unknown name: none), for the whole process. */
void sr__pg_fault_set(const char *name);
int sr__pg_fault(void);

#endif
