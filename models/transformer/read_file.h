/*
 * transformer read_file: a whole file into memory, for the tokenizer's vocabulary files and the dataset's
 * texts.  One call, no state.  Only regular files are read (a device such as /dev/zero, a pipe or a
 * directory is refused before reading), and only up to a size cap.
 */
#ifndef TF_READ_FILE_H
#define TF_READ_FILE_H

#include <stddef.h>

/* The cap of tf_read_file: far above any vocabulary file (GPT-2's vocab.json is 1 MiB). */
#define TF_READ_FILE_MAX ((size_t)1 << 30)

/* The file's bytes, NUL-terminated (malloc'ed; *len excludes the NUL), or NULL with a message in
   err naming the file as `what` ("vocab.json", "data file") and the reason: missing, not a
   regular file, larger than TF_READ_FILE_MAX, out of memory. */
char *tf_read_file(const char *path, const char *what, size_t *len, char *err, size_t errlen);
/* The same with a cap of `max` bytes; `cap_why` (e.g. "the 4 GiB all data files may hold
   together") says in the message where the cap comes from. */
char *tf_read_file_max(const char *path, const char *what, size_t max, const char *cap_why, size_t *len, char *err,
                       size_t errlen);
/* "a directory", "a character device", ... for a file type that is not a regular file. */
const char *tf_file_kind(unsigned mode);

#endif
