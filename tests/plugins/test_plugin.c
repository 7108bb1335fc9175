/* A configurable plugin for the plugin host's tests: each build of this file (CMakeLists.txt)
 * gets a few TP_* definitions that make it wrong (or right) in one way. It has two devices and
 * implements no memory or programs (those answer HPF_ERROR_UNSUPPORTED). */
#include <stdlib.h>

#include "hpf/plugin.h"

#ifndef TP_NAME
#error "TP_NAME must be defined"
#endif
#ifndef TP_ABI_MAJOR
#define TP_ABI_MAJOR HPF_PLUGIN_ABI_MAJOR
#endif
#ifndef TP_ABI_MINOR
#define TP_ABI_MINOR HPF_PLUGIN_ABI_MINOR
#endif
#ifndef TP_SCORE0
#define TP_SCORE0 1
#endif
#ifndef TP_SCORE1
#define TP_SCORE1 3
#endif
#ifndef TP_REASON0
#define TP_REASON0 ""
#endif
#ifndef TP_REASON1
#define TP_REASON1 ""
#endif

struct hpf_error {
  hpf_error_code code;
  const char* message;
};
struct hpf_plugin {
  int unused;
};

static hpf_error* make_error(hpf_error_code code, const char* message) {
  hpf_error* e = malloc(sizeof *e);
  if (!e) abort();
  e->code = code;
  e->message = message;
  return e;
}

static hpf_error_code tp_error_code(const hpf_error* e) { return e->code; }
static const char* tp_error_message(const hpf_error* e) { return e->message; }
static void tp_error_destroy(hpf_error* e) { free(e); }

static hpf_error* tp_plugin_init(hpf_plugin** out) {
  *out = NULL;
#ifdef TP_INIT_FAILS
  return make_error(HPF_ERROR_DEVICE, "no test device attached");
#else
  static hpf_plugin instance;
  *out = &instance;
  return NULL;
#endif
}
static void tp_plugin_destroy(hpf_plugin* p) { (void)p; }

static const hpf_plugin_info kInfo = {sizeof(hpf_plugin_info), TP_NAME, "0.0.1"};
static const hpf_plugin_info* tp_plugin_info(const hpf_plugin* p) {
  (void)p;
  return &kInfo;
}

#ifdef TP_NEWER
/* A future minor that appended a field to hpf_precision_support: the host must step through the
 * array by struct_size, not by its own sizeof. */
typedef struct precision_next {
  hpf_precision_support base;
  const char* appended;
} precision_next;
static const precision_next kPrecisions[] = {
    {{sizeof(precision_next), "matmul", "f32,bf16"}, "future"},
    {{sizeof(precision_next), "elementwise", " f32 , f16 "}, "future"},
};
#define PRECISIONS (&kPrecisions[0].base)
#else
static const hpf_precision_support kPrecisions[] = {
    {sizeof(hpf_precision_support), "matmul", "f32,bf16"},
    {sizeof(hpf_precision_support), "elementwise", " f32 , f16 "},
};
#define PRECISIONS kPrecisions
#endif
static const hpf_kv kFingerprint[] = {{sizeof(hpf_kv), "isa", "test"}, {sizeof(hpf_kv), "driver", "none"}};

static const hpf_device_info kDevices[2] = {
    {sizeof(hpf_device_info), "test-a", "testarch", "c", TP_SCORE0, TP_REASON0, 1u << 20, 2, PRECISIONS, 2,
     kFingerprint, 2, "testcc 1", "-O2"},
    {sizeof(hpf_device_info), "test-b", "testarch", "c", TP_SCORE1, TP_REASON1, 2u << 20, 4, PRECISIONS, 2,
     kFingerprint, 2, "testcc 1", "-O2"},
};

static int32_t tp_device_count(const hpf_plugin* p) {
  (void)p;
  return 2;
}
static const hpf_device_info* tp_device_info(const hpf_plugin* p, int32_t d) {
  (void)p;
  return d >= 0 && d < 2 ? &kDevices[d] : NULL;
}
static hpf_error* tp_device_synchronize(hpf_plugin* p, int32_t d) {
  (void)p;
  (void)d;
  return NULL;
}

static hpf_error* unsupported(void) { return make_error(HPF_ERROR_UNSUPPORTED, "the test plugin has no memory or programs"); }

static hpf_error* tp_buffer_alloc(hpf_plugin* p, int32_t d, size_t n, hpf_buffer** out) {
  (void)p, (void)d, (void)n;
  *out = NULL;
  return unsupported();
}
static void tp_buffer_free(hpf_plugin* p, hpf_buffer* b) { (void)p, (void)b; }
static void* tp_buffer_pointer(hpf_plugin* p, hpf_buffer* b) {
  (void)p, (void)b;
  return NULL;
}
static hpf_error* tp_buffer_copy_in(hpf_plugin* p, hpf_buffer* b, size_t o, const void* s, size_t n) {
  (void)p, (void)b, (void)o, (void)s, (void)n;
  return unsupported();
}
static hpf_error* tp_buffer_copy_out(hpf_plugin* p, const hpf_buffer* b, size_t o, void* d, size_t n) {
  (void)p, (void)b, (void)o, (void)d, (void)n;
  return unsupported();
}
static hpf_error* tp_program_compile(hpf_plugin* p, int32_t d, const char* s, size_t n, hpf_blob** out) {
  (void)p, (void)d, (void)s, (void)n;
  *out = NULL;
  return unsupported();
}
static void tp_blob_free(hpf_plugin* p, hpf_blob* b) { (void)p, (void)b; }
static hpf_error* tp_program_load(hpf_plugin* p, int32_t d, const void* data, size_t n, hpf_program** out) {
  (void)p, (void)d, (void)data, (void)n;
  *out = NULL;
  return unsupported();
}
static void tp_program_unload(hpf_plugin* p, hpf_program* prog) { (void)p, (void)prog; }
static hpf_error* tp_kernel_get(hpf_plugin* p, hpf_program* prog, const char* name, hpf_kernel** out) {
  (void)p, (void)prog, (void)name;
  *out = NULL;
  return unsupported();
}
static hpf_error* tp_kernel_launch(hpf_plugin* p, hpf_kernel* k, const hpf_launch* l) {
  (void)p, (void)k, (void)l;
  return unsupported();
}
static hpf_error* tp_timer_create(hpf_plugin* p, int32_t d, hpf_timer** out) {
  (void)p, (void)d;
  *out = NULL;
  return unsupported();
}
static void tp_timer_destroy(hpf_plugin* p, hpf_timer* t) { (void)p, (void)t; }
static hpf_error* tp_timer_start(hpf_plugin* p, hpf_timer* t) {
  (void)p, (void)t;
  return unsupported();
}
__attribute__((unused)) static hpf_error* tp_timer_stop(hpf_plugin* p, hpf_timer* t, uint64_t* ns) {
  (void)p, (void)t, (void)ns;
  return unsupported();
}

/* The table with room for one function a future minor appended. */
typedef struct table_next {
  hpf_plugin_api api;
  void (*appended)(void);
} table_next;

static void tp_appended(void) {}

#if defined(TP_NEWER)
#define TP_STRUCT_SIZE sizeof(table_next)
#elif defined(TP_TRUNCATED)
#define TP_STRUCT_SIZE offsetof(hpf_plugin_api, timer_create)
#else
#define TP_STRUCT_SIZE sizeof(hpf_plugin_api)
#endif

#ifdef TP_NULL_FUNCTION
#define TP_TIMER_STOP NULL
#else
#define TP_TIMER_STOP tp_timer_stop
#endif

static const table_next kTable = {
    {
        .struct_size = TP_STRUCT_SIZE,
        .abi_major = TP_ABI_MAJOR,
        .abi_minor = TP_ABI_MINOR,
        .plugin_init = tp_plugin_init,
        .plugin_destroy = tp_plugin_destroy,
        .plugin_info = tp_plugin_info,
        .error_code = tp_error_code,
        .error_message = tp_error_message,
        .error_destroy = tp_error_destroy,
        .device_count = tp_device_count,
        .device_info = tp_device_info,
        .device_synchronize = tp_device_synchronize,
        .buffer_alloc = tp_buffer_alloc,
        .buffer_free = tp_buffer_free,
        .buffer_pointer = tp_buffer_pointer,
        .buffer_copy_in = tp_buffer_copy_in,
        .buffer_copy_out = tp_buffer_copy_out,
        .program_compile = tp_program_compile,
        .blob_free = tp_blob_free,
        .program_load = tp_program_load,
        .program_unload = tp_program_unload,
        .kernel_get = tp_kernel_get,
        .kernel_launch = tp_kernel_launch,
        .timer_create = tp_timer_create,
        .timer_destroy = tp_timer_destroy,
        .timer_start = tp_timer_start,
        .timer_stop = TP_TIMER_STOP,
    },
    tp_appended,
};

__attribute__((visibility("default"))) const hpf_plugin_api* hpf_get_plugin_api(void) { return &kTable.api; }
