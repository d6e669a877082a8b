/*
 * Where libshardrun.so itself lives: the build tree and an installation keep plugins/,
 * examples/ (tasks) and libshardrun_cuda.so next to it, so they are found without configuration.
 * Resolved once, on first use, in the agent and inherited by every worker.
 */
#ifndef SR__BASE_LIB_DIR_H
#define SR__BASE_LIB_DIR_H

/* The folder of the loaded libshardrun.so (symlinks resolved), or "." when it cannot be known. */
const char *sr__lib_dir(void);

#endif
