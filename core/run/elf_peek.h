/*
 * Reads an exported symbol's initial bytes straight from a shared object file, without loading
 * it: the agent checks a task's ABI header before any worker starts, and no task code (not even
 * its constructors) runs before the plugins have written the environment.
 */
#ifndef SR__CORE_ELF_PEEK_H
#define SR__CORE_ELF_PEEK_H

#include <stddef.h>

/* Copies the first `len` bytes of symbol `name`'s data from the ELF64 file at `path`.
   Returns 0, or -1 with a reason in err: not readable, not ELF, no such exported symbol. */
int sr__elf_peek_symbol(const char *path, const char *name, void *out, size_t len, char *err, size_t errlen);

#endif
