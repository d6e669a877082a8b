/*
 * Typed values of the environment contract: parsing with accelerate's semantics, canonical
 * spellings for writing, and the "did you mean" used by every unknown-name error.
 * Used by the agent when it resolves the job file; pure functions, no state.
 */
#ifndef SR__ENV_VALUE_H
#define SR__ENV_VALUE_H

#include <stddef.h>

#include "shardrun/plugin.h"

/* Accepted spellings of booleans, for messages. */
#define SR__BOOL_SPELLINGS "y yes t true on 1 / n no f false off 0 (any case)"

int sr__parse_bool(const char *s, int *out);      /* 0 ok, -1 not a boolean */
int sr__parse_int(const char *s, long long *out); /* strict decimal, optional sign */
int sr__parse_float(const char *s, double *out);  /* finite decimal number */

/* A double as JSON wants it: the shortest of %.15g, %.16g and %.17g that reads back as exactly v
   (0.011761408, not 0.011761407999999999), or "null" when v is NaN or infinite (JSON has neither:
   the caller flags it).  buf of at least 32 bytes; returns buf. */
char *sr__fmt_double(double v, char *buf, size_t len);

/* Index of `s` among the '|'-separated `choices` (case-insensitive); with SR_KEY_ENUM_DIGITS the
   digits 1..n also select.  -1 when none matches. */
int sr__enum_index(const char *choices, unsigned flags, const char *s);
/* Copies choice number `idx` into buf. */
void sr__enum_choice(const char *choices, int idx, char *buf, size_t len);
/* "A, B, C" (+ " (or 1-3)") for messages. */
void sr__enum_describe(const char *choices, unsigned flags, char *buf, size_t len);

/* SR_KEY_INT flag of shardrun's own keys (never a plugin's): the value may also be a range
   "MIN:MAX" of two integers within the key's bounds, MIN <= MAX (nnodes of an elastic job). */
#define SR__KEY_INT_RANGE 0x100u

/* Checks `in` against the key's type and writes its canonical spelling into a new string
   (*out, to free).  On error returns -1 and explains in err ("expected ..."). Paths are returned
   unchanged (the caller resolves them). */
int sr__value_normalize(const sr_key *key, const char *in, char **out, char *err, size_t errlen);

/* Levenshtein distance, and the closest of `n` candidates within a useful distance (or NULL). */
size_t sr__edit_distance(const char *a, const char *b);
const char *sr__closest(const char *word, const char *const *cands, size_t n);

/* The job-file key -> variable rule: `[shardrun] KEY` -> SHARDRUN_KEY, `[SECTION] KEY` ->
   SHARDRUN_SECTION_KEY; uppercase, '.' and '-' become '_'. */
void sr__key_env_name(const char *section, const char *key, char *buf, size_t len);

/* Valid variable name: [A-Za-z_][A-Za-z0-9_]* */
int sr__valid_env_name(const char *name);

#endif
