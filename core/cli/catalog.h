/*
 * Describing what exists, generated from the tables: `shardrun plugins` (plugins found and their
 * keys), `shardrun reference` (docs/environment.md's reference, Markdown) and the key table of --help.
 */
#ifndef SR__CORE_CATALOG_H
#define SR__CORE_CATALOG_H

#include <stdio.h>

#include "shardrun/plugin.h"

void sr__print_key_table(FILE *out, const char *section, const sr_key *keys, int markdown, int header);
/* Lists every shardrun_*.so in the plugin folders; returns 0. */
int sr__cmd_plugins(const char *extra_dirs);
/* Markdown reference of every key and variable; returns 0. */
int sr__cmd_reference(void);

#endif
