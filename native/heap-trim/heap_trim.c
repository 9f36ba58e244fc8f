/*
 * trimHeap(done): glibc's malloc_trim(0), run on a libuv worker thread, then done(released).
 *
 * Why: glibc's free() gives memory back to the system only from the top of the heap. A server that has
 * just streamed a burst of output through short-lived buffers has freed most of that memory, but the
 * free chunks sit below a few live ones, so the process keeps its peak RSS (measured: 287 MiB of heap,
 * of which 46 MiB live, after 50 sessions printed 8 MiB each). malloc_trim(0) walks the free chunks of
 * every arena and returns their whole pages (madvise), which nothing in Node exposes.
 *
 * Off the event loop because it walks the whole heap (it takes the arena's lock: other threads' mallocs
 * wait for it, the event loop does not). Where the C library is not glibc, `supported` is false and
 * ptydeck does not call it.
 */
#include <node_api.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

typedef struct {
  napi_async_work work;
  napi_ref done;
  int released;
} TrimJob;

static void Execute(napi_env env, void* data) {
  (void)env;
  TrimJob* job = data;
#ifdef __GLIBC__
  job->released = malloc_trim(0);
#else
  job->released = 0;
#endif
}

static void Complete(napi_env env, napi_status status, void* data) {
  TrimJob* job = data;
  napi_value done, global, arg;
  if (status == napi_ok && napi_get_reference_value(env, job->done, &done) == napi_ok && napi_get_global(env, &global) == napi_ok &&
      napi_get_boolean(env, job->released != 0, &arg) == napi_ok) {
    napi_call_function(env, global, done, 1, &arg, NULL);
  }
  napi_delete_reference(env, job->done);
  napi_delete_async_work(env, job->work);
  free(job);
}

static napi_value TrimHeap(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], name;
  napi_valuetype type;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok ||
      type != napi_function) {
    napi_throw_type_error(env, NULL, "trimHeap needs a callback");
    return NULL;
  }
  TrimJob* job = calloc(1, sizeof *job);
  if (!job) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  if (napi_create_reference(env, argv[0], 1, &job->done) != napi_ok ||
      napi_create_string_utf8(env, "ptydeck:heapTrim", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, Execute, Complete, job, &job->work) != napi_ok || napi_queue_async_work(env, job->work) != napi_ok) {
    free(job);
    napi_throw_error(env, NULL, "could not queue the heap trim");
    return NULL;
  }
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn, supported;
#ifdef __GLIBC__
  const int glibc = 1;
#else
  const int glibc = 0;
#endif
  if (napi_create_function(env, "trimHeap", NAPI_AUTO_LENGTH, TrimHeap, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trimHeap", fn) != napi_ok) return NULL;
  if (napi_get_boolean(env, glibc, &supported) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "supported", supported) != napi_ok) return NULL;
  return exports;
}
