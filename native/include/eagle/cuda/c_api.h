/* The C facade of eagle::cuda: opaque handles over the same C++ objects, for ctypes and any
 * other FFI. Every function returns 0 or an eagle_error_kind; the details of this thread's last
 * failure are in eagle_last_error(). No C++ exception crosses this boundary. One declaration
 * per line (a test parses them). */
#ifndef EAGLE_CUDA_C_API_H
#define EAGLE_CUDA_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define EAGLE_CUDA_C extern "C" __attribute__((visibility("default")))
#else
#define EAGLE_CUDA_C __attribute__((visibility("default")))
#endif

enum eagle_error_kind { EAGLE_OK = 0, EAGLE_CUDA_ERROR = 1, EAGLE_UNAVAILABLE = 2, EAGLE_CAPTURE_ERROR = 3,
                        EAGLE_ARTIFACT_ERROR = 4, EAGLE_ARGUMENT_ERROR = 5, EAGLE_OTHER_ERROR = 6 };
enum eagle_arg_type { EAGLE_F64 = 0, EAGLE_F32 = 1, EAGLE_I64 = 2, EAGLE_I32 = 3, EAGLE_U32 = 4, EAGLE_U64 = 5,
                      EAGLE_BOOL = 6, EAGLE_PTR = 7 };

typedef struct { int kind; int cu_result; const char* name; const char* call; const char* message; } eagle_error;
typedef struct { int is_float; double f64; int64_t i64; } eagle_value;

typedef struct eagle_stream eagle_stream;
typedef struct eagle_event eagle_event;
typedef struct eagle_capture eagle_capture;
typedef struct eagle_graph eagle_graph;
typedef struct eagle_exec eagle_exec;
typedef struct eagle_module eagle_module;
typedef struct eagle_launcher eagle_launcher;
typedef struct eagle_buffer eagle_buffer;
typedef struct eagle_loaded eagle_loaded;
typedef struct eagle_loop eagle_loop;
typedef struct eagle_hostmapped eagle_hostmapped;

EAGLE_CUDA_C int eagle_cuda_abi_version(void);
EAGLE_CUDA_C const char* eagle_cuda_version(void);
EAGLE_CUDA_C const eagle_error* eagle_last_error(void);
EAGLE_CUDA_C int eagle_unavailable_reason(char* out, size_t size);
EAGLE_CUDA_C int eagle_driver_version(int* out);
EAGLE_CUDA_C int eagle_device_count(int* out);
EAGLE_CUDA_C int eagle_device_info(int ordinal, char* name, size_t size, int* sm, int* multiprocessors, int* while_nodes);
EAGLE_CUDA_C int eagle_device_synchronize(int ordinal);
EAGLE_CUDA_C int eagle_stream_create(int ordinal, int non_blocking, eagle_stream** out);
EAGLE_CUDA_C int eagle_stream_wrap(uint64_t handle, int ordinal, eagle_stream** out);
EAGLE_CUDA_C int eagle_stream_current(int ordinal, eagle_stream** out);
EAGLE_CUDA_C uint64_t eagle_stream_handle(eagle_stream* stream);
EAGLE_CUDA_C int eagle_stream_synchronize(eagle_stream* stream);
EAGLE_CUDA_C int eagle_stream_push_current(eagle_stream* stream);
EAGLE_CUDA_C int eagle_stream_pop_current(int ordinal);
EAGLE_CUDA_C int eagle_stream_wait(eagle_stream* stream, eagle_event* event);
EAGLE_CUDA_C int eagle_stream_capture_status(eagle_stream* stream, int* out);
EAGLE_CUDA_C int eagle_event_create(int ordinal, eagle_event** out);
EAGLE_CUDA_C int eagle_event_record(eagle_event* event, eagle_stream* stream);
EAGLE_CUDA_C int eagle_capture_begin(eagle_stream* stream, int mode, eagle_capture** out);
EAGLE_CUDA_C int eagle_capture_status(eagle_capture* capture, int* status, size_t* nodes);
EAGLE_CUDA_C int eagle_capture_end(eagle_capture* capture, eagle_graph** out);
EAGLE_CUDA_C int eagle_graph_node_count(eagle_graph* graph, size_t* out);
EAGLE_CUDA_C int eagle_graph_instantiate(eagle_graph* graph, eagle_exec** out);
EAGLE_CUDA_C int eagle_exec_upload(eagle_exec* exec, eagle_stream* stream);
EAGLE_CUDA_C int eagle_exec_launch(eagle_exec* exec, eagle_stream* stream, uint64_t times);
EAGLE_CUDA_C int eagle_repeat_while(int ordinal, eagle_graph* body, uint64_t flag, const char* dtype, uint64_t counter, int64_t limit, eagle_exec** out);
EAGLE_CUDA_C int eagle_module_load(int ordinal, const void* image, size_t size, eagle_module** out);
EAGLE_CUDA_C int eagle_module_max_blocks(eagle_module* module, const char* name, unsigned block, int* out);
EAGLE_CUDA_C int eagle_loop_create(eagle_module* module, const char* step, const char* decide, int64_t n, unsigned block, int64_t steps_per_launch, int64_t grow_until, int64_t full, int64_t spread, eagle_loop** out);
EAGLE_CUDA_C uint64_t eagle_loop_control(eagle_loop* loop);
EAGLE_CUDA_C int eagle_loop_set_args(eagle_loop* loop, const int* types, const eagle_value* values, size_t count);
EAGLE_CUDA_C int eagle_loop_build(eagle_loop* loop);
EAGLE_CUDA_C int eagle_loop_run(eagle_loop* loop, int64_t steps, int64_t max_steps, int host, eagle_stream* stream, int64_t* launches, int64_t* taken, int64_t* live, int64_t* steps_per_launch);
EAGLE_CUDA_C int eagle_loop_prepare_for_capture(eagle_loop* loop, int64_t steps, int64_t max_steps);
EAGLE_CUDA_C int eagle_loop_append_to(eagle_loop* loop, eagle_stream* stream);
EAGLE_CUDA_C int eagle_loop_read_counters(eagle_loop* loop, int64_t* launches, int64_t* steps, int64_t* live);
EAGLE_CUDA_C int eagle_loop_set_progress(eagle_loop* loop, uint64_t device_ptr);
EAGLE_CUDA_C int eagle_hostmapped_alloc(int ordinal, size_t bytes, eagle_hostmapped** out);
EAGLE_CUDA_C void* eagle_hostmapped_host(eagle_hostmapped* memory);
EAGLE_CUDA_C uint64_t eagle_hostmapped_device(eagle_hostmapped* memory);
EAGLE_CUDA_C int eagle_launcher_create(eagle_module* module, const char* name, const int* types, size_t count, unsigned block, eagle_launcher** out);
EAGLE_CUDA_C int eagle_launcher_launch(eagle_launcher* launcher, unsigned grid, const eagle_value* values, size_t count, eagle_stream* stream);
EAGLE_CUDA_C int eagle_buffer_alloc(int ordinal, size_t bytes, eagle_buffer** out);
EAGLE_CUDA_C uint64_t eagle_buffer_ptr(eagle_buffer* buffer);
EAGLE_CUDA_C int eagle_buffer_upload(eagle_buffer* buffer, const void* host, size_t bytes);
EAGLE_CUDA_C int eagle_buffer_download(eagle_buffer* buffer, void* host, size_t bytes);
EAGLE_CUDA_C int eagle_memory_zero(int ordinal, uint64_t ptr, size_t bytes);
EAGLE_CUDA_C int eagle_memory_to_host(int ordinal, void* host, uint64_t ptr, size_t bytes);
EAGLE_CUDA_C int eagle_artifact_check(const char* path);
EAGLE_CUDA_C int eagle_loaded_open(const char* path, int ordinal, eagle_loaded** out);
EAGLE_CUDA_C uint64_t eagle_loaded_control(eagle_loaded* loaded);
EAGLE_CUDA_C int eagle_loaded_launch_values(eagle_loaded* loaded, unsigned grid, const eagle_value* values, size_t count, eagle_stream* stream);
EAGLE_CUDA_C int eagle_loaded_run(eagle_loaded* loaded, const char* const* names, const uint64_t* pointers, const int64_t* shapes, const int* ndims, size_t arrays, const char* const* param_names, const double* params, size_t nparams, int64_t max_steps, int64_t steps_per_launch, int64_t* launches, int64_t* steps, int64_t* live);
EAGLE_CUDA_C void eagle_release(void* object);

#endif
