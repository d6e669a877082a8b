/*
 * SR_API marks the functions libshardrun.so exports: the declarations of the shardrun/ headers.
 *
 * Lifecycle: none; included by the other public headers.  libshardrun is compiled with hidden
 * visibility, so a function is part of the library's surface exactly when its declaration carries
 * SR_API (tests/cli/library_surface.sh checks both ways against `nm -D`).  For the code that
 * includes these headers (tasks, the shardrun executable) the attribute changes nothing.
 */
#ifndef SHARDRUN_API_H
#define SHARDRUN_API_H

#if defined(__GNUC__) || defined(__clang__)
#define SR_API __attribute__((visibility("default")))
#else
#define SR_API
#endif

#endif
