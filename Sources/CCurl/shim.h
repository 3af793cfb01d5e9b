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
/* Runs a transfer as curl_easy_perform does, asking `cancelled(user_data)` every `poll_ms` while it waits: a
   transfer is cut within poll_ms of being cancelled, where curl calls its progress callback only about once a
   second on a connection that sends nothing (a close deadline must not wait for that). */
typedef int (*exp_curl_cancel_check)(void *user_data);
static inline CURLcode exp_curl_perform_cancellable(CURL *handle, exp_curl_cancel_check cancelled, void *user_data,
                                                    int poll_ms) {
    CURLM *multi = curl_multi_init();
    if (!multi) return curl_easy_perform(handle);
    if (curl_multi_add_handle(multi, handle) != CURLM_OK) {
        curl_multi_cleanup(multi);
        return curl_easy_perform(handle);
    }
    CURLcode result = CURLE_OK;
    int running = 1, finished = 0;
    for (;;) {
        if (curl_multi_perform(multi, &running) != CURLM_OK) { result = CURLE_FAILED_INIT; break; }
        if (!running) { finished = 1; break; }
        if (cancelled(user_data)) { result = CURLE_ABORTED_BY_CALLBACK; break; }
        if (curl_multi_poll(multi, NULL, 0, poll_ms, NULL) != CURLM_OK) { result = CURLE_FAILED_INIT; break; }
    }
    if (finished) {
        int left = 0;
        CURLMsg *message;
        while ((message = curl_multi_info_read(multi, &left)) != NULL) {
            if (message->msg == CURLMSG_DONE && message->easy_handle == handle) result = message->data.result;
        }
    }
    curl_multi_remove_handle(multi, handle);
    curl_multi_cleanup(multi);
    return result;
}
#endif
