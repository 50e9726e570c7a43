// SPDX-License-Identifier: Apache-2.0
/*
 * Control surface of the fake CUDA (libfakecudacore.so), the core behind
 * two front ends the loader opens: libfakecudart.so exports the cuda*
 * entry points of the runtime API, libfakecudadriver.so the cu* entry
 * points of the driver API (what libcuda.so.1 exports). Host memory stands
 * in for device memory. Tests link the core for these functions; whichever
 * front end the loader opens links the same core, so both see one state.
 * (The Windows build puts the core into the runtime DLL itself.)
 *
 * Calls are counted per operation, and both front ends count into the same
 * operations: `cudaMemcpy` and the driver's cuMemcpyHtoD_v2, cuMemcpyDtoH_v2,
 * cuMemcpyDtoD_v2 and cuMemcpy are one operation, `cudaFree` and
 * cuMemFree_v2 another. Any of its names works wherever a function name is
 * taken (counts, faults); the call log writes the runtime's name where the
 * runtime has one, so one expected sequence serves either API.
 * fake_cudart_symbol_calls() counts exact exported names.
 *
 * The driver front end behaves like the driver: nothing works before
 * cuInit (CUDA_ERROR_NOT_INITIALIZED), FAKE_CUDART_DEVICE_COUNT=0 makes
 * cuInit answer CUDA_ERROR_NO_DEVICE, and memory, stream, external-memory,
 * semaphore and GL calls fail with CUDA_ERROR_INVALID_CONTEXT (201) on a thread where
 * no retained context is current (cuCtxPushCurrent_v2/cuCtxPopCurrent_v2
 * keep a stack per thread). Context pushes and pops, like error strings,
 * stay out of the call log.
 *
 * Environment (read on first use):
 *   FAKE_CUDART_DEVICE_COUNT=n   devices cudaGetDeviceCount reports (default 1;
 *                                0 answers cudaErrorNoDevice, like the real one)
 *   FAKE_CUDART_FAIL=spec,...    faults: spec is `name[@error][:times][:closefd|:reusefd]`
 *                                (error default 999; times default forever;
 *                                closefd: a failing cudaImportExternalMemory
 *                                closes the fd anyway, as some drivers do;
 *                                reusefd: and then another file takes the
 *                                number, as a racing open() would)
 *   FAKE_CUDART_CHECK_BALANCE=1  at exit, an unbalanced create/destroy count
 *                                (a primary context retained and not
 *                                released, a context pushed and not popped,
 *                                included) or an ordering violation ends the
 *                                process with status 97 (a report is printed
 *                                either way)
 *   FAKE_CUDART_TRACE=1          every call printed to stderr, by its exported
 *                                name
 *   FAKE_CUDART_ACCEPT_DMABUF=1  cudaImportExternalMemory(OpaqueFd) (and the
 *                                driver's cuImportExternalMemory) takes a
 *                                DMA-BUF or memfd, as Jetson-class drivers do;
 *                                unset or 0 (the default): it answers
 *                                cudaErrorInvalidValue and leaves the fd to the
 *                                caller, as a desktop driver does. Every test
 *                                that uses the fake says which one it emulates.
 *                                (The Windows build refuses every fd import.)
 *   FAKE_CUDART_ACCEPT_D3D11=1   D3D11 textures and fences are imported (see
 *                                "Direct3D 11" below); unset or 0: refused
 *                                with cudaErrorNotSupported, as on Linux
 *   FAKE_CUDART_WAIT_TIMEOUT_MS=n  how long a stream synchronisation waits for
 *                                a queued semaphore wait (default 3000); see below
 *
 * External semaphores. cudaImportExternalSemaphore / cuImportExternalSemaphore
 * take OpaqueFd (1) and TimelineSemaphoreFd (9) from a file at least 8 bytes
 * long (a memfd, say): the semaphore's payload is the little-endian uint64 at
 * offset 0 of that file, so a test's "producer" holding its own dup of the
 * fd signals by writing a value there (pwrite), and reads CUDA's signals the
 * same way. A shorter file is refused (cudaErrorInvalidValue) and the fd stays
 * the caller's; an imported fd is the fake's and is closed by
 * cudaDestroyExternalSemaphore (FAKE_CUDART_FAIL's closefd/reusefd apply to the
 * import as to external memory). Win32 types (OpaqueWin32 2, OpaqueWin32Kmt 3,
 * D3D12Fence 4, D3D11Fence 5, TimelineSemaphoreWin32 10) accept any non-null
 * handle on every OS (a real Linux driver refuses them), never close it, and
 * keep the payload inside the fake; NvSciSync and keyed mutexes answer
 * cudaErrorNotSupported. Fences and timelines count up: a signal to a value
 * not above both the payload and every value signalled before is refused
 * (cudaErrorInvalidValue), as a validation layer would report. Binary types
 * (1..3) are signalled (payload non-zero) or not; a wait resets them.
 * Everything else in the fake runs at once, but a wait not yet satisfied is
 * queued on its stream, and so is whatever semaphore operation is queued
 * behind it there: cudaStreamSynchronize / cuStreamSynchronize of that stream
 * blocks until the queue drains (a signal through CUDA on another stream, or
 * a producer's write, seen within a millisecond). After
 * FAKE_CUDART_WAIT_TIMEOUT_MS it gives up, drops the queue, counts a
 * violation and answers 702 (cudaErrorLaunchTimeout / CUDA_ERROR_LAUNCH_TIMEOUT)
 * where a GPU would hang. A semaphore destroyed, or a stream destroyed, with
 * operations still queued on it is a violation too; a semaphore never
 * destroyed is a leak ("external_semaphore") for the balance check.
 *
 * Direct3D 11. A D3D11Resource import (type 6, Dedicated flag required)
 * takes the NT handle of a texture of the software D3D11 device, whose
 * bytes the fake reaches through the device's C hook
 * tm_software_d3d11_video_memory (found with dlsym in the test process);
 * the import takes any size. Mapping its mipmapped array checks the
 * descriptor (offset 0, one level, depth 0, flags 0, zero tail), that the
 * channel description's texel times the width is exactly the texture's row
 * and the height its row count, and that the declared size covers the
 * fake's footprint of the texture: its row rounded up to 512 bytes times
 * its row count rounded up to 16 (so a 1920x1080 RGBA texture needs twice
 * its tight size, and a tiny one more than a page). The array's level 0
 * copies to and from device memory with the 2-D copies, stream-ordered: a
 * copy queued behind a semaphore wait runs when the wait does. A D3D11Fence
 * semaphore imported from a software device's shared fence handle reads
 * the fence's completed value through tm_software_d3d11_fence_value. Device
 * LUIDs: fake_cudart_set_device_luid. Mipmapped arrays count as
 * "mipmapped_array" objects; destroying external memory with one still
 * mapped is a violation.
 */
#ifndef TENSORMEM_TESTS_FAKE_CUDART_H
#define TENSORMEM_TESTS_FAKE_CUDART_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Makes `fn` (e.g. "cudaImportExternalMemory", or a driver name such as
 * "cuCtxPushCurrent_v2"; see above for names shared by one operation) fail
 * with `error` for the next `times` calls (-1: until cleared). `close_fd`
 * applies to the external-memory import: 1 closes the fd anyway, 2 also puts
 * /dev/null on the freed number. Returns 0, or -1 for an unknown name. */
int fake_cudart_set_fault(const char *fn, int error, int times, int close_fd);
void fake_cudart_clear_faults(void);
/* Zeroes the call counters, the call log and the violation count (live
 * objects stay). */
void fake_cudart_reset_counters(void);
/* Calls of `fn` since the last reset (NULL: all calls). */
unsigned long fake_cudart_calls(const char *fn);
/* Calls of exactly the exported function `symbol` since the last reset. */
unsigned long fake_cudart_symbol_calls(const char *symbol);
/* Live objects of one kind: "external_memory", "mapped_buffer", "malloc",
 * "mipmapped_array",
 * "stream", "graphics_resource", "graphics_mapping", "external_semaphore",
 * and the driver's
 * "primary_context" (retains not released) and "current_context" (pushes
 * not popped, all threads); NULL: all kinds but the driver's two (the
 * process runtime keeps its primary context until exit). */
size_t fake_cudart_live(const char *kind);
/* The driver context current on the calling thread (NULL: none). */
void *fake_cudart_current_context(void);
/* The call log since the last reset (cudaGetErrorString left out), names
 * separated by single spaces,
 * written NUL-terminated into buf; returns the full length. */
size_t fake_cudart_call_log(char *buf, size_t capacity);
/* Ordering violations seen (a destroyed external memory whose mapped buffer
 * was never freed, unregistering a mapped resource, ...). */
unsigned long fake_cudart_violations(void);
void fake_cudart_set_device_count(int count);
/* 1: DMA-BUF/memfd imports succeed (a Jetson-class driver); 0: they are
 * refused (a desktop driver). Overrides FAKE_CUDART_ACCEPT_DMABUF. */
void fake_cudart_set_accept_dmabuf(int accept);
int fake_cudart_accepts_dmabuf(void);
/* 1: D3D11 textures (cudaExternalMemoryHandleTypeD3D11Resource) and a
 * software device's shared D3D11 fences are imported, as a Windows driver
 * does; 0: refused with cudaErrorNotSupported, as CUDA on Linux does (the
 * default). Overrides FAKE_CUDART_ACCEPT_D3D11. */
void fake_cudart_set_accept_d3d11(int accept);
/* The LUID device `device` reports (cudaDeviceProp::luid, cuDeviceGetLuid):
 * LowPart, HighPart. Device 0 starts with the software D3D11 device's
 * default adapter (0x50465753, 0), the others with zero. -1: no such slot. */
int fake_cudart_set_device_luid(int device, unsigned int low, int high);
/* The size the last D3D11 import declared (0: none yet), refused or not. */
unsigned long long fake_cudart_last_import_size(void);
/* The fd the last successful cudaImportExternalMemory took over (-1 none). */
int fake_cudart_last_import_fd(void);
/* How long a stream synchronisation waits for a queued semaphore wait
 * before it answers 702 (overrides FAKE_CUDART_WAIT_TIMEOUT_MS). */
void fake_cudart_set_wait_timeout_ms(long ms);
/* Semaphore waits and signals queued on streams and not run yet. */
size_t fake_cudart_pending_semaphore_ops(void);
/* 2-D copies, semaphore waits and signals and stream synchronisations
 * issued on the legacy default stream (a null stream) since the last reset:
 * accepted, as CUDA accepts them, and counted, because on a GPU they order
 * against all work of the device. */
unsigned long fake_cudart_default_stream_ops(void);
/* Frees every live object without counting it (for tests that leak on
 * purpose, so the exit check stays meaningful for the rest); the driver's
 * contexts are left as they are. */
void fake_cudart_release_all(void);

#ifdef __cplusplus
}
#endif

#endif
