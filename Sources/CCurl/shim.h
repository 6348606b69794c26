#ifndef HERALD_CCURL_SHIM_H
#define HERALD_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift cannot call.
   These typed wrappers are the only way Swift reaches them. */
static inline CURLcode herald_curl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_write_callback(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb); }
static inline CURLcode herald_curl_easy_setopt_header_callback(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb); }
static inline CURLcode herald_curl_easy_setopt_read_callback(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_READFUNCTION, cb); }
/* CURLOPT_SEEKFUNCTION: asked before libcurl sends a body again (its own resend on a fresh connection). */
static inline CURLcode herald_curl_easy_setopt_seek_callback(CURL *h, int (*cb)(void *, curl_off_t, int)) { return curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, cb); }
/* CURLOPT_DEBUGFUNCTION (with CURLOPT_VERBOSE): what libcurl would print, handed to herald to mask. */
static inline CURLcode herald_curl_easy_setopt_debug_callback(CURL *h, int (*cb)(CURL *, curl_infotype, char *, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_DEBUGFUNCTION, cb); }
static inline CURLcode herald_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode herald_curl_easy_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode herald_curl_easy_getinfo_off_t(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode herald_curl_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode herald_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

/* Macros that Swift does not import (expressions), as functions. */
static inline CURLcode herald_curl_global_init_default(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }
static inline long herald_curl_error_size(void) { return CURL_ERROR_SIZE; }
/* The running libcurl's version: number 0xXXYYZZ and text. */
static inline unsigned int herald_curl_version_num(void) { return curl_version_info(CURLVERSION_NOW)->version_num; }
static inline const char *herald_curl_version_string(void) { return curl_version_info(CURLVERSION_NOW)->version; }
#endif
