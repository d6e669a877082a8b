/*
 * Plugin loader (agent side): name -> file (the section's `path`, else the plugin folders),
 * dlopen, the ABI check, and the checks across plugins (listed twice, requirements).
 * Each failure is reported separately in the diag list; nothing here runs plugin hooks.
 */
#ifndef SR__CORE_PLUGINS_H
#define SR__CORE_PLUGINS_H

#include <stddef.h>

#include "shardrun/plugin.h"
#include "base/diag.h"

typedef struct sr__loaded_plugin {
    char *name; /* as listed in the job file */
    char *path; /* the file that was loaded */
    void *handle;
    const sr_plugin *p;
} sr__loaded_plugin;

/* Folders searched for shardrun_<name>.so: `extra` (colon-separated, may be NULL), then the
   built-in ones next to libshardrun.  Returns a NULL-terminated array to free with
   sr__free_strv(), or NULL when out of memory (as sr__split_path). */
char **sr__plugin_dirs(const char *extra);
/* Loads one plugin; 0 on success, else -1 with the reason in diag (prefixed with `where`, the
   job file's line that lists it, when not NULL; a name not found gets the closest one found). */
int sr__plugin_load(const char *name, const char *explicit_path, char *const *dirs, const char *where,
                    sr__loaded_plugin *out, sr__diag *diag);
/* Checks a loaded set: duplicates and `requires`. */
void sr__plugins_check_set(const sr__loaded_plugin *ps, size_t n, sr__diag *diag);
void sr__plugin_unload(sr__loaded_plugin *p);

char **sr__split_path(const char *colon_list);
void sr__free_strv(char **v);

#endif
