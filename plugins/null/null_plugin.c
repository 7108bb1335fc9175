/* The null plugin: every function of include/hpf/plugin.h, doing as little as honestly possible.
 *
 * One device "null" of dialect "null" with score 0, so libhpf never picks it to run a model. What
 * it does do is real and checked, so the plugin host, the kernel cache and the conformance tests
 * can exercise the whole table without a compiler or a device:
 *   - memory is host memory (malloc); copies are bounds-checked memcpy;
 *   - "compiling" wraps the source in a blob with a magic header; loading checks the header, so a
 *     foreign or corrupt binary is an error, as it must be for a real backend;
 *   - a kernel exists if its name appears in the source; launching it validates and does nothing;
 *   - timers measure host time (CLOCK_MONOTONIC).
 * Copy this folder to start a backend; README.md says what each function must do for real.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hpf/plugin.h"

#define HPF_NULL_EXPORT __attribute__((visibility("default")))

/* ---- errors: a code and a message, freed by error_destroy ---- */

struct hpf_error {
  hpf_error_code code;
  char message[256];
};

/* Returned when allocating an error fails; never freed. */
static struct hpf_error out_of_memory_error = {HPF_ERROR_OUT_OF_MEMORY, "out of memory"};

static hpf_error* make_error(hpf_error_code code, const char* format, ...) {
  hpf_error* e = malloc(sizeof *e);
  if (!e) return &out_of_memory_error;
  e->code = code;
  va_list args;
  va_start(args, format);
  vsnprintf(e->message, sizeof e->message, format, args);
  va_end(args);
  return e;
}

static hpf_error_code null_error_code(const hpf_error* error) { return error->code; }
static const char* null_error_message(const hpf_error* error) { return error->message; }
static void null_error_destroy(hpf_error* error) {
  if (error != &out_of_memory_error) free(error);
}

/* ---- the instance: everything *_info returns lives here until plugin_destroy ---- */

struct hpf_plugin {
  hpf_plugin_info info;
  hpf_device_info device;
  hpf_kv fingerprint[1];
};

static hpf_error* null_plugin_init(hpf_plugin** out) {
  *out = NULL;
  hpf_plugin* p = calloc(1, sizeof *p);
  if (!p) return make_error(HPF_ERROR_OUT_OF_MEMORY, "cannot allocate the plugin instance");
  p->info = (hpf_plugin_info){sizeof(hpf_plugin_info), "null", "1.0.0"};
  p->fingerprint[0] = (hpf_kv){sizeof(hpf_kv), "device", "null"};
  p->device = (hpf_device_info){
      .struct_size = sizeof(hpf_device_info),
      .name = "null",
      .architecture = "null",
      .dialect = "null",
      .score = 0, /* never chosen to run a model: see README.md */
      .score_reason = "the null plugin runs nothing",
      .memory_bytes = 0,
      .compute_units = 1,
      .precisions = NULL, /* it computes nothing, so it claims no format */
      .precision_count = 0,
      .fingerprint = p->fingerprint,
      .fingerprint_count = 1,
      .compiler = "null 1.0.0",
      .compile_flags = "",
  };
  *out = p;
  return NULL;
}

static void null_plugin_destroy(hpf_plugin* plugin) { free(plugin); }

static const hpf_plugin_info* null_plugin_info(const hpf_plugin* plugin) { return &plugin->info; }

/* ---- device ---- */

static int32_t null_device_count(const hpf_plugin* plugin) {
  (void)plugin;
  return 1;
}

static const hpf_device_info* null_device_info(const hpf_plugin* plugin, int32_t device) {
  return device == 0 ? &plugin->device : NULL;
}

static hpf_error* check_device(int32_t device) {
  if (device == 0) return NULL;
  return make_error(HPF_ERROR_INVALID_ARGUMENT, "no device %d (the null plugin has one device, 0)", (int)device);
}

static hpf_error* null_device_synchronize(hpf_plugin* plugin, int32_t device) {
  (void)plugin;
  return check_device(device); /* nothing is ever queued */
}

/* ---- memory: host memory ---- */

struct hpf_buffer {
  size_t size;
  unsigned char* data;
};

static hpf_error* null_buffer_alloc(hpf_plugin* plugin, int32_t device, size_t bytes, hpf_buffer** out) {
  (void)plugin;
  *out = NULL;
  hpf_error* e = check_device(device);
  if (e) return e;
  hpf_buffer* b = malloc(sizeof *b);
  unsigned char* data = malloc(bytes ? bytes : 1);
  if (!b || !data) {
    free(b);
    free(data);
    return make_error(HPF_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
  }
  b->size = bytes;
  b->data = data;
  *out = b;
  return NULL;
}

static void null_buffer_free(hpf_plugin* plugin, hpf_buffer* buffer) {
  (void)plugin;
  if (!buffer) return;
  free(buffer->data);
  free(buffer);
}

static void* null_buffer_pointer(hpf_plugin* plugin, hpf_buffer* buffer) {
  (void)plugin;
  return buffer->data;
}

static hpf_error* check_range(const hpf_buffer* b, size_t offset, size_t bytes, const void* host) {
  if (offset > b->size || bytes > b->size - offset)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "copy of %zu bytes at offset %zu exceeds the %zu-byte buffer", bytes,
                      offset, b->size);
  if (!host && bytes) return make_error(HPF_ERROR_INVALID_ARGUMENT, "NULL host pointer");
  return NULL;
}

static hpf_error* null_buffer_copy_in(hpf_plugin* plugin, hpf_buffer* dst, size_t offset, const void* src,
                                      size_t bytes) {
  (void)plugin;
  hpf_error* e = check_range(dst, offset, bytes, src);
  if (e) return e;
  if (bytes) memcpy(dst->data + offset, src, bytes);
  return NULL;
}

static hpf_error* null_buffer_copy_out(hpf_plugin* plugin, const hpf_buffer* src, size_t offset, void* dst,
                                       size_t bytes) {
  (void)plugin;
  hpf_error* e = check_range(src, offset, bytes, dst);
  if (e) return e;
  if (bytes) memcpy(dst, src->data + offset, bytes);
  return NULL;
}

/* ---- program: the "binary" is the source behind a magic header ---- */

static const char kMagic[] = "hpf-null-program-1\n"; /* bump when the blob layout changes */
#define MAGIC_SIZE (sizeof kMagic - 1)

struct hpf_program {
  size_t size;
  char* text; /* NUL-terminated copy of the source */
};

struct hpf_kernel {
  int unused;
};
/* Kernels do nothing, so one shared object stands for all of them. A real plugin returns an
 * object owned by the program (freed by program_unload). */
static struct hpf_kernel the_kernel;

static hpf_error* null_program_compile(hpf_plugin* plugin, int32_t device, const char* source, size_t source_size,
                                       hpf_blob** out) {
  (void)plugin;
  *out = NULL;
  hpf_error* e = check_device(device);
  if (e) return e;
  if (!source && source_size) return make_error(HPF_ERROR_INVALID_ARGUMENT, "NULL source");
  /* One allocation: the hpf_blob header, then the bytes it points to. */
  hpf_blob* blob = malloc(sizeof *blob + MAGIC_SIZE + source_size);
  if (!blob) return make_error(HPF_ERROR_OUT_OF_MEMORY, "cannot allocate a %zu-byte blob", source_size);
  unsigned char* bytes = (unsigned char*)(blob + 1);
  memcpy(bytes, kMagic, MAGIC_SIZE);
  if (source_size) memcpy(bytes + MAGIC_SIZE, source, source_size);
  blob->struct_size = sizeof *blob;
  blob->data = bytes;
  blob->size = MAGIC_SIZE + source_size;
  *out = blob;
  return NULL;
}

static void null_blob_free(hpf_plugin* plugin, hpf_blob* blob) {
  (void)plugin;
  free(blob);
}

static hpf_error* null_program_load(hpf_plugin* plugin, int32_t device, const void* data, size_t size,
                                    hpf_program** out) {
  (void)plugin;
  *out = NULL;
  hpf_error* e = check_device(device);
  if (e) return e;
  if (!data || size < MAGIC_SIZE || memcmp(data, kMagic, MAGIC_SIZE) != 0)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "not a null-plugin binary (%zu bytes without its header)", size);
  hpf_program* p = malloc(sizeof *p);
  char* text = malloc(size - MAGIC_SIZE + 1);
  if (!p || !text) {
    free(p);
    free(text);
    return make_error(HPF_ERROR_OUT_OF_MEMORY, "cannot load a %zu-byte program", size);
  }
  memcpy(text, (const char*)data + MAGIC_SIZE, size - MAGIC_SIZE);
  text[size - MAGIC_SIZE] = '\0';
  p->size = size - MAGIC_SIZE;
  p->text = text;
  *out = p;
  return NULL;
}

static void null_program_unload(hpf_plugin* plugin, hpf_program* program) {
  (void)plugin;
  if (!program) return;
  free(program->text);
  free(program);
}

static hpf_error* null_kernel_get(hpf_plugin* plugin, hpf_program* program, const char* name, hpf_kernel** out) {
  (void)plugin;
  *out = NULL;
  if (!name || !*name) return make_error(HPF_ERROR_INVALID_ARGUMENT, "empty kernel name");
  if (!strstr(program->text, name)) return make_error(HPF_ERROR_NOT_FOUND, "no kernel '%s' in the program", name);
  *out = &the_kernel;
  return NULL;
}

static hpf_error* null_kernel_launch(hpf_plugin* plugin, hpf_kernel* kernel, const hpf_launch* launch) {
  (void)plugin;
  (void)kernel;
  /* Read only the fields the caller's struct_size covers: a host of an older minor sends less. */
  if (!launch || launch->struct_size < offsetof(hpf_launch, grain) + sizeof launch->grain)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "hpf_launch is missing or too small");
  if (launch->arg_count && !launch->args) return make_error(HPF_ERROR_INVALID_ARGUMENT, "arg_count > 0 but args is NULL");
  if (launch->work_items < 0 || launch->grain < 0)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "negative work_items or grain");
  return NULL; /* runs nothing */
}

/* ---- timer: host time ---- */

struct hpf_timer {
  uint64_t start_ns;
  int started;
};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static hpf_error* null_timer_create(hpf_plugin* plugin, int32_t device, hpf_timer** out) {
  (void)plugin;
  *out = NULL;
  hpf_error* e = check_device(device);
  if (e) return e;
  hpf_timer* t = calloc(1, sizeof *t);
  if (!t) return make_error(HPF_ERROR_OUT_OF_MEMORY, "cannot allocate a timer");
  *out = t;
  return NULL;
}

static void null_timer_destroy(hpf_plugin* plugin, hpf_timer* timer) {
  (void)plugin;
  free(timer);
}

static hpf_error* null_timer_start(hpf_plugin* plugin, hpf_timer* timer) {
  (void)plugin;
  timer->start_ns = now_ns();
  timer->started = 1;
  return NULL;
}

static hpf_error* null_timer_stop(hpf_plugin* plugin, hpf_timer* timer, uint64_t* elapsed_ns) {
  (void)plugin;
  if (!timer->started) return make_error(HPF_ERROR_INVALID_ARGUMENT, "timer_stop before timer_start");
  *elapsed_ns = now_ns() - timer->start_ns;
  timer->started = 0;
  return NULL;
}

/* ---- the table ---- */

static const hpf_plugin_api kApi = {
    .struct_size = sizeof(hpf_plugin_api),
    .abi_major = HPF_PLUGIN_ABI_MAJOR,
    .abi_minor = HPF_PLUGIN_ABI_MINOR,
    .plugin_init = null_plugin_init,
    .plugin_destroy = null_plugin_destroy,
    .plugin_info = null_plugin_info,
    .error_code = null_error_code,
    .error_message = null_error_message,
    .error_destroy = null_error_destroy,
    .device_count = null_device_count,
    .device_info = null_device_info,
    .device_synchronize = null_device_synchronize,
    .buffer_alloc = null_buffer_alloc,
    .buffer_free = null_buffer_free,
    .buffer_pointer = null_buffer_pointer,
    .buffer_copy_in = null_buffer_copy_in,
    .buffer_copy_out = null_buffer_copy_out,
    .program_compile = null_program_compile,
    .blob_free = null_blob_free,
    .program_load = null_program_load,
    .program_unload = null_program_unload,
    .kernel_get = null_kernel_get,
    .kernel_launch = null_kernel_launch,
    .timer_create = null_timer_create,
    .timer_destroy = null_timer_destroy,
    .timer_start = null_timer_start,
    .timer_stop = null_timer_stop,
};

HPF_NULL_EXPORT const hpf_plugin_api* hpf_get_plugin_api(void) { return &kApi; }
