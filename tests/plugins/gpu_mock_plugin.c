/* A GPU-shaped plugin for the Session's GPU path, on machines without a GPU: one device speaking
 * GM_DIALECT ("cuda" unless defined otherwise), host memory for its buffers, and "compiles"
 * that only check the source is GPU-dialect source and keep it. Launches run nothing: each is
 * recorded (kernel name, work items, grain, argument count, whether every pointer argument lies
 * inside one of its live buffers) for the test to read through the extra exported symbol
 * gm_launches. Copies, fallbacks on the reference interpreter and the memory plan are real. */
#include <stdlib.h>
#include <string.h>

#include "hpf/plugin.h"

#ifndef GM_DIALECT
#define GM_DIALECT "cuda"
#endif

struct hpf_error {
  hpf_error_code code;
  char message[160];
};
struct hpf_plugin {
  int unused;
};
struct hpf_buffer {
  unsigned char* data;
  size_t bytes;
  struct hpf_buffer* next;
};
struct hpf_program {
  char* source;
  hpf_kernel* kernels;
};
struct hpf_kernel {
  char name[64];
  struct hpf_kernel* next;
};
struct hpf_timer {
  int unused;
};

typedef struct gm_launch {
  char name[64];
  int64_t work_items, grain;
  uint32_t grid0, block0; /* the caller's geometry (0: the GPU launch rule) */
  size_t arg_count;
  int args_in_buffers; /* every argument points into a live buffer */
} gm_launch;

enum { kMaxLaunches = 4096 };
static gm_launch launches[kMaxLaunches];
static size_t launch_count;
static struct hpf_buffer* live_buffers;

/* The launches so far (at most kMaxLaunches kept); `reset` nonzero forgets them. */
__attribute__((visibility("default"))) const gm_launch* gm_launches(size_t* count, int reset) {
  if (reset) launch_count = 0;
  *count = launch_count < kMaxLaunches ? launch_count : kMaxLaunches;
  return launches;
}

static hpf_error* make_error(hpf_error_code code, const char* what, const char* detail) {
  hpf_error* e = calloc(1, sizeof *e);
  if (!e) abort();
  e->code = code;
  strncpy(e->message, what, sizeof e->message - 1);
  strncat(e->message, detail, sizeof e->message - 1 - strlen(e->message));
  return e;
}
static hpf_error_code gm_error_code(const hpf_error* e) { return e->code; }
static const char* gm_error_message(const hpf_error* e) { return e->message; }
static void gm_error_destroy(hpf_error* e) { free(e); }

static hpf_error* gm_plugin_init(hpf_plugin** out) {
  static hpf_plugin instance;
  *out = &instance;
  return NULL;
}
static void gm_plugin_destroy(hpf_plugin* p) { (void)p; }
static const hpf_plugin_info kInfo = {sizeof(hpf_plugin_info), TP_NAME, "0.0.1"};
static const hpf_plugin_info* gm_plugin_info(const hpf_plugin* p) {
  (void)p;
  return &kInfo;
}

static const hpf_precision_support kPrecisions[] = {
    {sizeof(hpf_precision_support), "matmul", "f32,tf32,bf16,f16,i8,u8,f8e4m3,f8e5m2"},
    {sizeof(hpf_precision_support), "conv", "f32,tf32,bf16,f16,f8e4m3,f8e5m2"},
    {sizeof(hpf_precision_support), "elementwise", "f32,f16,bf16"},
};
static const hpf_kv kFingerprint[] = {{sizeof(hpf_kv), "arch", "sm_90"}, {sizeof(hpf_kv), "driver", "mock"}};
static const hpf_device_info kDevice = {sizeof(hpf_device_info), "mock GPU", "sm_90", GM_DIALECT, 1, "",
                                        1u << 30, 132, kPrecisions, 3, kFingerprint, 2, "mockcc 1", ""};

static int32_t gm_device_count(const hpf_plugin* p) {
  (void)p;
  return 1;
}
static const hpf_device_info* gm_device_info(const hpf_plugin* p, int32_t d) {
  (void)p;
  return d == 0 ? &kDevice : NULL;
}
static hpf_error* gm_device_synchronize(hpf_plugin* p, int32_t d) {
  (void)p, (void)d;
  return NULL;
}

static hpf_error* gm_buffer_alloc(hpf_plugin* p, int32_t d, size_t n, hpf_buffer** out) {
  (void)p, (void)d;
  hpf_buffer* b = calloc(1, sizeof *b);
  if (!b || !(b->data = calloc(n ? n : 1, 1))) {
    free(b);
    return make_error(HPF_ERROR_OUT_OF_MEMORY, "mock: out of memory", "");
  }
  b->bytes = n;
  b->next = live_buffers;
  live_buffers = b;
  *out = b;
  return NULL;
}
static void gm_buffer_free(hpf_plugin* p, hpf_buffer* b) {
  (void)p;
  for (hpf_buffer** at = &live_buffers; *at; at = &(*at)->next)
    if (*at == b) {
      *at = b->next;
      break;
    }
  if (b) free(b->data);
  free(b);
}
static void* gm_buffer_pointer(hpf_plugin* p, hpf_buffer* b) {
  (void)p;
  return b->data;
}
static hpf_error* gm_buffer_copy_in(hpf_plugin* p, hpf_buffer* b, size_t o, const void* s, size_t n) {
  (void)p;
  if (o + n > b->bytes) return make_error(HPF_ERROR_INVALID_ARGUMENT, "mock: copy_in past the buffer", "");
  memcpy(b->data + o, s, n);
  return NULL;
}
static hpf_error* gm_buffer_copy_out(hpf_plugin* p, const hpf_buffer* b, size_t o, void* d, size_t n) {
  (void)p;
  if (o + n > b->bytes) return make_error(HPF_ERROR_INVALID_ARGUMENT, "mock: copy_out past the buffer", "");
  memcpy(d, b->data + o, n);
  return NULL;
}

static hpf_error* gm_program_compile(hpf_plugin* p, int32_t d, const char* s, size_t n, hpf_blob** out) {
  (void)p, (void)d;
  *out = NULL;
  char* copy = malloc(n + 1);
  if (!copy) abort();
  memcpy(copy, s, n);
  copy[n] = 0;
  if (!strstr(copy, "extern \"C\" __global__ void ")) {
    free(copy);
    return make_error(HPF_ERROR_COMPILE, "mock: not " GM_DIALECT " dialect source (no extern \"C\" __global__ kernel)", "");
  }
  hpf_blob* b = malloc(sizeof *b);
  if (!b) abort();
  b->struct_size = sizeof *b;
  b->data = copy;
  b->size = n;
  *out = b;
  return NULL;
}
static void gm_blob_free(hpf_plugin* p, hpf_blob* b) {
  (void)p;
  if (b) free((void*)b->data);
  free(b);
}
static hpf_error* gm_program_load(hpf_plugin* p, int32_t d, const void* data, size_t n, hpf_program** out) {
  (void)p, (void)d;
  hpf_program* prog = calloc(1, sizeof *prog);
  if (!prog || !(prog->source = malloc(n + 1))) abort();
  memcpy(prog->source, data, n);
  prog->source[n] = 0;
  *out = prog;
  return NULL;
}
static void gm_program_unload(hpf_plugin* p, hpf_program* prog) {
  (void)p;
  if (!prog) return;
  while (prog->kernels) {
    hpf_kernel* k = prog->kernels;
    prog->kernels = k->next;
    free(k);
  }
  free(prog->source);
  free(prog);
}
static hpf_error* gm_kernel_get(hpf_plugin* p, hpf_program* prog, const char* name, hpf_kernel** out) {
  (void)p;
  *out = NULL;
  char head[96];
  strcpy(head, " ");
  strncat(head, name, 80);
  strcat(head, "(");
  if (strlen(name) >= 64 || !strstr(prog->source, head))
    return make_error(HPF_ERROR_NOT_FOUND, "mock: no kernel ", name);
  hpf_kernel* k = calloc(1, sizeof *k);
  if (!k) abort();
  strcpy(k->name, name);
  k->next = prog->kernels;
  prog->kernels = k;
  *out = k;
  return NULL;
}
static int in_a_buffer(const void* ptr) {
  for (const hpf_buffer* b = live_buffers; b; b = b->next)
    if ((const unsigned char*)ptr >= b->data && (const unsigned char*)ptr < b->data + (b->bytes ? b->bytes : 1)) return 1;
  return 0;
}
static hpf_error* gm_kernel_launch(hpf_plugin* p, hpf_kernel* k, const hpf_launch* l) {
  (void)p;
  if (launch_count < kMaxLaunches) {
    gm_launch* r = &launches[launch_count];
    strcpy(r->name, k->name);
    r->work_items = l->work_items;
    r->grain = l->grain;
    r->grid0 = l->grid[0];
    r->block0 = l->block[0];
    r->arg_count = l->arg_count;
    r->args_in_buffers = 1;
    for (size_t a = 0; a < l->arg_count; ++a) r->args_in_buffers &= in_a_buffer(l->args[a]);
  }
  ++launch_count;
  return NULL;
}
static hpf_error* gm_timer_create(hpf_plugin* p, int32_t d, hpf_timer** out) {
  (void)p, (void)d;
  *out = calloc(1, sizeof **out);
  return NULL;
}
static void gm_timer_destroy(hpf_plugin* p, hpf_timer* t) {
  (void)p;
  free(t);
}
static hpf_error* gm_timer_start(hpf_plugin* p, hpf_timer* t) {
  (void)p, (void)t;
  return NULL;
}
static hpf_error* gm_timer_stop(hpf_plugin* p, hpf_timer* t, uint64_t* ns) {
  (void)p, (void)t;
  *ns = 1000;
  return NULL;
}

static const hpf_plugin_api kTable = {
    .struct_size = sizeof(hpf_plugin_api),
    .abi_major = HPF_PLUGIN_ABI_MAJOR,
    .abi_minor = HPF_PLUGIN_ABI_MINOR,
    .plugin_init = gm_plugin_init,
    .plugin_destroy = gm_plugin_destroy,
    .plugin_info = gm_plugin_info,
    .error_code = gm_error_code,
    .error_message = gm_error_message,
    .error_destroy = gm_error_destroy,
    .device_count = gm_device_count,
    .device_info = gm_device_info,
    .device_synchronize = gm_device_synchronize,
    .buffer_alloc = gm_buffer_alloc,
    .buffer_free = gm_buffer_free,
    .buffer_pointer = gm_buffer_pointer,
    .buffer_copy_in = gm_buffer_copy_in,
    .buffer_copy_out = gm_buffer_copy_out,
    .program_compile = gm_program_compile,
    .blob_free = gm_blob_free,
    .program_load = gm_program_load,
    .program_unload = gm_program_unload,
    .kernel_get = gm_kernel_get,
    .kernel_launch = gm_kernel_launch,
    .timer_create = gm_timer_create,
    .timer_destroy = gm_timer_destroy,
    .timer_start = gm_timer_start,
    .timer_stop = gm_timer_stop,
};

__attribute__((visibility("default"))) const hpf_plugin_api* hpf_get_plugin_api(void) { return &kTable; }
