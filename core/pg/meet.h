/*
 * A meeting of a group's ranks through the store while a backend creates the group (pg/shm.c:
 * "every rank created its segment", "every rank mapped them all"; pg/hier.c: "every host set up its
 * shared memory"): each rank gives a number and learns every rank's, in store requests linear in the
 * group's size, like the world's meetings in pg.c.
 *
 * How: each rank sets <prefix><stage>/<rank> to its number and counts itself in at
 * <prefix><stage>/count; the rank that brings the count to the group's size reads every rank's
 * number in one request and sets the combined table <prefix><stage>/all ("v0 v1 ... vn-1"); every
 * rank then waits for that one key and reads it in one request.  Three requests per rank, two more
 * for the last one (one of them reads n keys): 3n + 2 for the group, where a wait on every rank's
 * key and a read of each, by every rank, made n^2.  Only after a timeout are the ranks' own keys
 * checked, to name the ones that never came.
 *
 * Called from the group's creating thread, with the setup's store calls (made holding its lock).
 */
#ifndef SR__CORE_PG_MEET_H
#define SR__CORE_PG_MEET_H

#include <stddef.h>

#include "pg/backend.h"

enum {
    SR__MEET_ERROR = -1, /* a store error (the store's message in why) */
    SR__MEET_OK = 0,     /* vals[r] holds rank r's number, for every rank */
    SR__MEET_LATE = 1,   /* not every rank came within the setup's timeout; why names them ("2, 5") */
    SR__MEET_OOM = 2,    /* rank *who ran out of memory for the meeting (this one, or the one that made the table) */
};

/* Gives this rank's number at `stage` and waits for every rank's, into vals[0 .. size). */
int sr__pg_meet(const sr__pg_setup *s, const char *stage, long long value, long long *vals, int *who, char *why,
                size_t whylen);

/* Gives this rank's number at `stage` without waiting for the others': a rank that failed before the
   meeting (out of memory, say) still takes its part, so that the others learn it from the table at
   once instead of waiting for it until the timeout.  Failures are ignored (the caller is failing). */
void sr__pg_meet_say(const sr__pg_setup *s, const char *stage, long long value);

#endif
