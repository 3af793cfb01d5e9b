#ifndef EXP_CCURL_SHIM_H
#define EXP_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed helper per
   argument kind. */
static inline CURLcode exp_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode exp_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode exp_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode exp_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
typedef size_t (*exp_curl_data_callback)(char *data, size_t size, size_t count, void *user_data);
static inline CURLcode exp_curl_setopt_callback(CURL *handle, CURLoption option, exp_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}
/* Progress callback (CURLOPT_XFERINFOFUNCTION): a nonzero return aborts the transfer. */
typedef int (*exp_curl_progress_callback)(void *user_data, curl_off_t download_total, curl_off_t download_now,
                                          curl_off_t upload_total, curl_off_t upload_now);
static inline CURLcode exp_curl_setopt_progress(CURL *handle, exp_curl_progress_callback value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}
static inline CURLcode exp_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
/* The CA bundle file this libcurl was built to use (CURLINFO_CAINFO, libcurl 7.84 and later; NULL before, or
   when it was built without one). A static string of the library: not freed. */
static inline const char *exp_curl_default_cainfo(CURL *handle) {
    char *path = NULL;
#if LIBCURL_VERSION_NUM >= 0x075400
    if (curl_easy_getinfo(handle, CURLINFO_CAINFO, &path) != CURLE_OK) path = NULL;
#else
    (void)handle;
#endif
    return path;
}
#endif
