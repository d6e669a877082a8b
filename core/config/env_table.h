/*
 * The environment contract, shardrun's side: every key of the [shardrun] section (each also a
 * SHARDRUN_* variable by the naming rule) and every other variable the host reads.
 * Plugins declare their own keys and variables in their sr_plugin; `shardrun reference` joins
 * both into docs/environment.md.  Declared once here; --help, validation and that page
 * are generated from it.
 */
#ifndef SR__ENV_TABLE_H
#define SR__ENV_TABLE_H

#include "shardrun/plugin.h"

/* [shardrun] section keys, NULL-name terminated. */
extern const sr_key sr__shardrun_keys[];

/* Variables the host reads that are not keys (cluster detection), NULL-name terminated. */
extern const sr_var sr__host_reads[];

/* [task] is free-form; every plugin's section also takes these host-owned keys (`path`),
   NULL-name terminated. */
extern const sr_key sr__plugin_host_keys[];

const sr_key *sr__find_key(const sr_key *keys, const char *name);

#endif
