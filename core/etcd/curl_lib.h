/*
 * libcurl, loaded when the first etcd client opens (dlopen of libcurl.so.4), not linked: libshardrun
 * is loaded by every agent, worker and tool, and only an agent of an rdzv_backend = etcd job talks
 * to etcd; libcurl and the thirty libraries it brings (TLS, Kerberos, LDAP...) would add 16 MiB of
 * mappings and their start-up to every process.  <curl/curl.h> gives the types and constants; the
 * calls go through sr__curl(), the table of the functions the client uses.
 *
 *     const sr__curl_api *cu = sr__curl(err, sizeof err);     (NULL: libcurl absent, err says so)
 *     CURL *e = cu->easy_init();
 */
#ifndef SR__ETCD_CURL_LIB_H
#define SR__ETCD_CURL_LIB_H

#include <stddef.h>

#define CURL_DISABLE_TYPECHECK /* curl_easy_setopt is called through a pointer, not the macro */
#include <curl/curl.h>

typedef struct sr__curl_api {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *e, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL *e);
    CURLcode (*easy_getinfo)(CURL *e, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    void (*easy_cleanup)(CURL *e);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
    void (*slist_free_all)(struct curl_slist *list);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *m, CURL *e);
    CURLMcode (*multi_remove_handle)(CURLM *m, CURL *e);
    CURLMcode (*multi_perform)(CURLM *m, int *running);
    CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd extra[], unsigned n, int timeout_ms, int *ret);
    CURLMsg *(*multi_info_read)(CURLM *m, int *left);
    CURLMcode (*multi_cleanup)(CURLM *m);
} sr__curl_api;

/* The table, libcurl loaded and started (curl_global_init) once per process; NULL with err when it
   cannot be (not installed: the message says which package). */
const sr__curl_api *sr__curl(char *err, size_t errlen);
/* The table once sr__curl() returned it (the client's calls after its open). */
const sr__curl_api *sr__curl_loaded(void);

#endif
