// SPDX-License-Identifier: Apache-2.0
/* A C client of the CUDA GL channel (see c_channel.c). */
#ifndef TENSORMEM_TESTS_C_CHANNEL_H
#define TENSORMEM_TESTS_C_CHANNEL_H

#include <tensormem/tensormem_cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct c_channel_record {
  int retains;
  int releases;
  int maps;
  int unmaps;
  int unregisters;
} c_channel_record;

tm_cuda_gl_ops c_channel_ops(c_channel_record *record);

#ifdef __cplusplus
}
#endif

#endif
