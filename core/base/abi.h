/*
 * Versioned structs across the plugin and task ABIs.
 *
 * A struct a plugin or task hands to the host (sr_plugin, sr_task) starts with abi_version and
 * struct_size.  abi_version changes only for incompatible changes; compatible growth appends
 * fields.  The host therefore accepts any struct_size that reaches every field it reads: a
 * larger struct (built against a newer header that appended fields) is fine, its tail is not
 * read; a smaller one that lacks a field the host needs is refused with a message naming both
 * sizes.  A field added later is read only when the struct reaches it (SR__REACHES).
 */
#ifndef SR__BASE_ABI_H
#define SR__BASE_ABI_H

#include <stddef.h>

/* Whether a struct of `size` bytes contains all of `field` of `type`. */
#define SR__REACHES(type, size, field) ((size_t)(size) >= offsetof(type, field) + sizeof(((type *)0)->field))

#endif
