/* Lists of files named by glob patterns, as the job's keys take them (`data`'s token shards,
   `eval_files`): whitespace-separated patterns, a backslash keeping the next character literal
   ("my\ shard.bin"), relative ones under the job file's folder. */
#ifndef SR__BASE_GLOB_EACH_H
#define SR__BASE_GLOB_EACH_H

#include <stddef.h>

/* Calls fn(path, ctx) for each file the patterns match, pattern by pattern, each pattern's
   matches sorted (as glob(3) sorts them).  A pattern that is not absolute is taken under base_dir
   (when not NULL), whose own glob characters are escaped.  A pattern with wildcards that matches
   nothing fails with "PATTERN: no such NOUN (the pattern matches no file)"; one without wildcards
   is handed to fn as it is, existing or not (fn says why it cannot read it).  Returns the number of patterns (0:
   none named), or -1 with err filled (no match, out of memory, a folder that cannot be listed, or
   fn's -1, which fills err itself). */
int sr__glob_each(const char *patterns, const char *base_dir, const char *noun, int (*fn)(const char *path, void *ctx),
                  void *ctx, char *err, size_t errlen);

#endif
