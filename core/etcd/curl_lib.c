/* libcurl through dlopen (etcd/curl_lib.h says why). */
#define _GNU_SOURCE
#include "etcd/curl_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "base/fail.h"

static sr__curl_api api;
static const sr__curl_api *loaded;
static char why[600];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, sizeof why,
                 "rdzv_backend = etcd needs libcurl, which cannot be loaded: %s (apt-get install libcurl4)", dlerror());
        return;
    }
    /* each name, or the first one missing (a libcurl older than 7.66 has no curl_multi_poll) */
    struct {
        const char *name;
        void **slot;
    } fns[] = {
        {"curl_global_init", (void **)&api.global_init},
        {"curl_easy_init", (void **)&api.easy_init},
        {"curl_easy_setopt", (void **)&api.easy_setopt},
        {"curl_easy_perform", (void **)&api.easy_perform},
        {"curl_easy_getinfo", (void **)&api.easy_getinfo},
        {"curl_easy_strerror", (void **)&api.easy_strerror},
        {"curl_easy_cleanup", (void **)&api.easy_cleanup},
        {"curl_slist_append", (void **)&api.slist_append},
        {"curl_slist_free_all", (void **)&api.slist_free_all},
        {"curl_multi_init", (void **)&api.multi_init},
        {"curl_multi_add_handle", (void **)&api.multi_add_handle},
        {"curl_multi_remove_handle", (void **)&api.multi_remove_handle},
        {"curl_multi_perform", (void **)&api.multi_perform},
        {"curl_multi_poll", (void **)&api.multi_poll},
        {"curl_multi_info_read", (void **)&api.multi_info_read},
        {"curl_multi_cleanup", (void **)&api.multi_cleanup},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (!(*fns[i].slot = dlsym(h, fns[i].name))) {
            snprintf(why, sizeof why,
                     "rdzv_backend = etcd needs libcurl 7.66 or newer: the libcurl.so.4 found has no %s", fns[i].name);
            return;
        }
    CURLcode rc = api.global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(why, sizeof why, "libcurl did not start: %s", api.easy_strerror(rc));
        return;
    }
    loaded = &api;
}

const sr__curl_api *sr__curl(char *err, size_t errlen) {
    pthread_once(&once, load);
    if (!loaded) sr__fail(err, errlen, "%s", why);
    return loaded;
}

const sr__curl_api *sr__curl_loaded(void) { return loaded; }
