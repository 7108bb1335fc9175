/* libhpf plugin ABI: the C boundary between libhpf and a hardware backend.
 *
 * A backend is a shared library named libhpf-plugin-<name>.so exporting exactly one symbol:
 *
 *     const hpf_plugin_api* hpf_get_plugin_api(void);
 *
 * Versioning. The table carries {abi_major, abi_minor}. libhpf refuses a plugin of another
 * major; a plugin of an older minor is accepted and the host uses only the fields that minor
 * had (struct_size tells which). Fields are only ever appended, never reordered or removed;
 * each minor is one line in CHANGELOG-ABI.md. Every struct crossing the boundary starts with
 * `size_t struct_size` = sizeof(the struct as the writer compiled it).
 *
 * Ownership. Nothing allocated on one side is freed by the other: each object a plugin returns
 * (plugin instance, buffer, blob, program, kernel, timer, error) is released through the
 * matching function of the same table. Strings and tables a plugin returns from *_info stay
 * valid until plugin_destroy. No C++ types or exceptions cross the boundary.
 *
 * Arrays. The elements of hpf_device_info.precisions and .fingerprint are spaced by their own
 * struct_size (a later minor may append fields to them), not by the host's sizeof.
 *
 * Kernels belong to their program: there is no kernel release; a kernel handle is valid until
 * program_unload of its program.
 *
 * Launches. kernel_launch may return before the work is done on devices that queue it;
 * device_synchronize (and timer_stop) wait for it. The CPU plugin runs launches synchronously.
 *
 * Errors. Every fallible function returns NULL on success or an hpf_error* that the caller
 * reads with error_code/error_message and releases with error_destroy.
 *
 * Threads. One hpf_plugin instance may be called from several threads for different
 * buffers/programs; calls on the same object are serialised by the caller.
 */
#ifndef HPF_PLUGIN_H_
#define HPF_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HPF_PLUGIN_ABI_MAJOR 1
#define HPF_PLUGIN_ABI_MINOR 0
#define HPF_PLUGIN_ENTRY_POINT "hpf_get_plugin_api"

typedef enum hpf_error_code {
  HPF_ERROR_INVALID_ARGUMENT = 1, /* bad input from the caller (size, name, source) */
  HPF_ERROR_UNSUPPORTED = 2,      /* valid but not available here (format, feature) */
  HPF_ERROR_NOT_FOUND = 3,        /* a named kernel, device or file does not exist */
  HPF_ERROR_DEVICE = 4,           /* the driver or device failed */
  HPF_ERROR_COMPILE = 5,          /* the compiler rejected the source; message holds its log */
  HPF_ERROR_OUT_OF_MEMORY = 6,
  HPF_ERROR_INTERNAL = 7
} hpf_error_code;

typedef struct hpf_error hpf_error;     /* opaque, plugin-owned */
typedef struct hpf_plugin hpf_plugin;   /* one initialised instance of a plugin */
typedef struct hpf_buffer hpf_buffer;   /* device memory */
typedef struct hpf_program hpf_program; /* a loaded binary */
typedef struct hpf_kernel hpf_kernel;   /* an entry point of a loaded program */
typedef struct hpf_timer hpf_timer;     /* measures device time between two points */

/* A name/value pair: fingerprint fields, properties. */
typedef struct hpf_kv {
  size_t struct_size;
  const char* key;
  const char* value;
} hpf_kv;

/* Formats (libhpf's names: "f32", "tf32", "bf16", "f16", "f8e4m3", "f8e5m2", "i8", "u8", "i4")
 * a device runs for one op class ("matmul", "conv", "elementwise", "normalization", ...). The
 * list may also carry a hint that is not a format: "i8w7", the class's INT8 dot product is
 * exact and fastest when one operand has 7 bits (u8 x s8 pairs summed in 16 bits): the planner
 * then gives W8A8 weights |q| <= 64, or, where a MatMul quantises its rows at run time, rows of
 * 0..127 (u7) with 8-bit weights. Names the host does not know are ignored. */
typedef struct hpf_precision_support {
  size_t struct_size;
  const char* op_class;
  const char* formats; /* comma-separated */
} hpf_precision_support;

typedef struct hpf_plugin_info {
  size_t struct_size;
  const char* name;    /* "cpu", "cuda", "hip", "null", or a vendor's own */
  const char* version; /* the plugin's own version, free-form */
} hpf_plugin_info;

typedef struct hpf_device_info {
  size_t struct_size;
  const char* name;         /* "AMD EPYC 7763", "NVIDIA H200" */
  const char* architecture; /* "x86-64-v3", "sm_90", "gfx90a" */
  const char* dialect;      /* kernel source language: "c", "cuda", "hip", or a vendor's own */
  int32_t score;            /* 0 = cannot run here; higher = preferred */
  const char* score_reason; /* why, when score is 0 (e.g. "no CUDA driver"); may be "" otherwise */
  uint64_t memory_bytes;
  int32_t compute_units;    /* cores, SMs, CUs */
  const hpf_precision_support* precisions;
  size_t precision_count;
  const hpf_kv* fingerprint; /* everything that changes generated code: ISA features, driver... */
  size_t fingerprint_count;
  const char* compiler;      /* compiler name and version, part of the kernel cache key */
  const char* compile_flags; /* flags used for every compile, part of the cache key */
} hpf_device_info;

/* A compiled binary, owned by the plugin until blob_free. */
typedef struct hpf_blob {
  size_t struct_size;
  const void* data;
  size_t size;
} hpf_blob;

/* Launch of one kernel. Dialect "c" kernels have the signature
 *     void name(void* const* args, int64_t begin, int64_t end);
 * and are called over [0, work_items) cut into ranges, in parallel. Other dialects define their
 * own use of grid/block. */
typedef struct hpf_launch {
  size_t struct_size;
  void* const* args; /* device pointers (from buffer_pointer) and scalars, kernel-defined */
  size_t arg_count;
  int64_t work_items;
  int64_t grain;     /* smallest range worth a thread; 0 = plugin's choice */
  uint32_t grid[3];  /* GPU dialects */
  uint32_t block[3];
  uint32_t shared_bytes;
} hpf_launch;

typedef struct hpf_plugin_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;

  /* -- lifetime and self-description -- */
  hpf_error* (*plugin_init)(hpf_plugin** out);
  void (*plugin_destroy)(hpf_plugin* plugin);
  const hpf_plugin_info* (*plugin_info)(const hpf_plugin* plugin);

  /* -- errors -- */
  hpf_error_code (*error_code)(const hpf_error* error);
  const char* (*error_message)(const hpf_error* error);
  void (*error_destroy)(hpf_error* error);

  /* -- device -- */
  int32_t (*device_count)(const hpf_plugin* plugin);
  const hpf_device_info* (*device_info)(const hpf_plugin* plugin, int32_t device);
  hpf_error* (*device_synchronize)(hpf_plugin* plugin, int32_t device);

  /* -- memory -- */
  hpf_error* (*buffer_alloc)(hpf_plugin* plugin, int32_t device, size_t bytes, hpf_buffer** out);
  void (*buffer_free)(hpf_plugin* plugin, hpf_buffer* buffer);
  /* The device address to pass in hpf_launch.args. */
  void* (*buffer_pointer)(hpf_plugin* plugin, hpf_buffer* buffer);
  hpf_error* (*buffer_copy_in)(hpf_plugin* plugin, hpf_buffer* dst, size_t offset, const void* src, size_t bytes);
  hpf_error* (*buffer_copy_out)(hpf_plugin* plugin, const hpf_buffer* src, size_t offset, void* dst, size_t bytes);

  /* -- program -- */
  /* Compiles `source` (in the device's dialect) to a binary for `device`. */
  hpf_error* (*program_compile)(hpf_plugin* plugin, int32_t device, const char* source, size_t source_size,
                                hpf_blob** out);
  void (*blob_free)(hpf_plugin* plugin, hpf_blob* blob);
  /* Loads a binary produced by program_compile (possibly in another process, from the cache). */
  hpf_error* (*program_load)(hpf_plugin* plugin, int32_t device, const void* data, size_t size, hpf_program** out);
  void (*program_unload)(hpf_plugin* plugin, hpf_program* program);
  hpf_error* (*kernel_get)(hpf_plugin* plugin, hpf_program* program, const char* name, hpf_kernel** out);
  hpf_error* (*kernel_launch)(hpf_plugin* plugin, hpf_kernel* kernel, const hpf_launch* launch);

  /* -- timer (profiler) -- */
  hpf_error* (*timer_create)(hpf_plugin* plugin, int32_t device, hpf_timer** out);
  void (*timer_destroy)(hpf_plugin* plugin, hpf_timer* timer);
  hpf_error* (*timer_start)(hpf_plugin* plugin, hpf_timer* timer);
  /* Stops, waits for the device, and gives the time between start and stop. */
  hpf_error* (*timer_stop)(hpf_plugin* plugin, hpf_timer* timer, uint64_t* elapsed_ns);
} hpf_plugin_api;

/* The last field of each struct in ABI 1.0; a new minor appends after these and updates them. */
#define HPF_PLUGIN_API_LAST_FIELD_1_0 timer_stop

typedef const hpf_plugin_api* (*hpf_get_plugin_api_fn)(void);

#ifdef __cplusplus
} /* extern "C" */

static_assert(sizeof(hpf_plugin_api) == offsetof(hpf_plugin_api, timer_stop) + sizeof(void*),
              "hpf_plugin_api: timer_stop must be the last field of ABI 1.0");
static_assert(sizeof(hpf_device_info) == offsetof(hpf_device_info, compile_flags) + sizeof(void*),
              "hpf_device_info: compile_flags must be the last field of ABI 1.0");
static_assert(sizeof(hpf_launch) == (offsetof(hpf_launch, shared_bytes) + sizeof(uint32_t) + alignof(hpf_launch) - 1) /
                                        alignof(hpf_launch) * alignof(hpf_launch),
              "hpf_launch: shared_bytes must be the last field of ABI 1.0");
#endif

#endif /* HPF_PLUGIN_H_ */
