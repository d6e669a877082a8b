/*
 * gpt2 read_file: a whole file into memory, for the tokenizer's vocabulary files and the dataset's
 * texts.  One call, no state.
 */
#ifndef GPT2_READ_FILE_H
#define GPT2_READ_FILE_H

#include <stddef.h>

/* The file's bytes, NUL-terminated (malloc'ed; *len excludes the NUL), or NULL with a message in
   err naming the file as `what` ("vocab.json", "data file") and the reason. */
char *gpt2_read_file(const char *path, const char *what, size_t *len, char *err, size_t errlen);

#endif
