// SPDX-License-Identifier: Apache-2.0
/*
 * Control surface of the fake CUDA runtime (libfakecudart.so). The library
 * exports the cuda* entry points libtensormem resolves, with host memory
 * standing in for device memory, plus these functions for tests. Tests may
 * link it directly: the loader's dlopen of the same file then finds the
 * copy already in the process, so both see one state.
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
 *   FAKE_CUDART_CHECK_BALANCE=1  at exit, an unbalanced create/destroy count or
 *                                an ordering violation ends the process with
 *                                status 97 (a report is printed either way)
 *   FAKE_CUDART_TRACE=1          every call printed to stderr
 *   FAKE_CUDART_ACCEPT_DMABUF=1  cudaImportExternalMemory(OpaqueFd) takes a
 *                                DMA-BUF or memfd, as Jetson-class drivers do;
 *                                unset or 0 (the default): it answers
 *                                cudaErrorInvalidValue and leaves the fd to the
 *                                caller, as a desktop driver does. Every test
 *                                that uses the fake says which one it emulates.
 *                                (The Windows build refuses every fd import.)
 */
#ifndef TENSORMEM_TESTS_FAKE_CUDART_H
#define TENSORMEM_TESTS_FAKE_CUDART_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Makes `fn` (e.g. "cudaImportExternalMemory") fail with `error` for the
 * next `times` calls (-1: until cleared). `close_fd` applies to
 * cudaImportExternalMemory: 1 closes the fd anyway, 2 also puts /dev/null on
 * the freed number. Returns 0, or -1 for an unknown name. */
int fake_cudart_set_fault(const char *fn, int error, int times, int close_fd);
void fake_cudart_clear_faults(void);
/* Zeroes the call counters, the call log and the violation count (live
 * objects stay). */
void fake_cudart_reset_counters(void);
/* Calls of `fn` since the last reset (NULL: all calls). */
unsigned long fake_cudart_calls(const char *fn);
/* Live objects of one kind: "external_memory", "mapped_buffer", "malloc",
 * "stream", "graphics_resource", "graphics_mapping"; NULL: all kinds. */
size_t fake_cudart_live(const char *kind);
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
/* The fd the last successful cudaImportExternalMemory took over (-1 none). */
int fake_cudart_last_import_fd(void);
/* Frees every live object without counting it (for tests that leak on
 * purpose, so the exit check stays meaningful for the rest). */
void fake_cudart_release_all(void);

#ifdef __cplusplus
}
#endif

#endif
