/*
 * Folders: making one with its missing parents (mkdir -p) and removing one with what it holds.
 * Nothing here prints: a failure returns -1 with errno set (and, for sr__mkdir_p, the folder that
 * could not be made in failed[]); the caller says what it was for.
 */
#ifndef SR__BASE_FS_H
#define SR__BASE_FS_H

#include <stddef.h>

/* Creates dir and its missing parents; an existing folder is fine, anything else of that name is
   not (errno EEXIST).  0, or -1 with errno and the path that failed in failed[len]. */
int sr__mkdir_p(const char *dir, char *failed, size_t len);

/* Removes path and everything under it, without following symbolic links; what is already gone is
   not an error.  0, or -1 with errno. */
int sr__remove_tree(const char *path);

#endif
