// SPDX-License-Identifier: Apache-2.0
// FFI mirrors without any CUDA header (CUDA-FFI-01..09, DESIGN §8). The
// comparison with a real driver_types.h is test_cuda_real.cpp.
#include <tensormem/internal/cuda_ffi.hpp>

#include <gtest/gtest.h>

#include <cstddef>

using namespace tensormem::cudaffi;

// Seed test external_memory_desc_abi, with the long layouts: the seed's 40-
// and 24-byte Linux structs are too short for CUDA 13, which reads a
// 16-word reserved tail (spec §7 item 2).
TEST(CudaFfi, CUDA_FFI_02_external_memory_desc_abi) {
  EXPECT_EQ(sizeof(ExternalMemoryHandleDesc), 104u);
  EXPECT_EQ(alignof(ExternalMemoryHandleDesc), 8u);
  EXPECT_EQ(offsetof(ExternalMemoryHandleDesc, handle), 8u);
  EXPECT_EQ(offsetof(ExternalMemoryHandleDesc, size), 24u);
  EXPECT_EQ(offsetof(ExternalMemoryHandleDesc, flags), 32u);
  EXPECT_EQ(sizeof(ExternalMemoryBufferDesc), 88u);
  EXPECT_EQ(offsetof(ExternalMemoryBufferDesc, size), 8u);
  EXPECT_EQ(offsetof(ExternalMemoryBufferDesc, flags), 16u);
}

TEST(CudaFfi, CUDA_FFI_04_08_long_layouts_of_the_windows_side_structs) {
  EXPECT_EQ(sizeof(ExternalMemoryMipmappedArrayDesc), 128u);
  EXPECT_EQ(offsetof(ExternalMemoryMipmappedArrayDesc, formatDesc), 8u);
  EXPECT_EQ(offsetof(ExternalMemoryMipmappedArrayDesc, extent), 32u);
  EXPECT_EQ(offsetof(ExternalMemoryMipmappedArrayDesc, flags), 56u);
  EXPECT_EQ(offsetof(ExternalMemoryMipmappedArrayDesc, numLevels), 60u);
  EXPECT_EQ(sizeof(ExternalSemaphoreHandleDesc), 96u);
  EXPECT_EQ(offsetof(ExternalSemaphoreHandleDesc, flags), 24u);
  EXPECT_EQ(sizeof(ExternalSemaphoreWaitParams), 144u);
  EXPECT_EQ(offsetof(ExternalSemaphoreWaitParams, flags), 72u);
  EXPECT_EQ(sizeof(ChannelFormatDesc), 20u);
  EXPECT_EQ(sizeof(Extent), 24u);
}

// The seed's labels were wrong: 5 is D3D12Resource, 4 is D3D12Fence.
TEST(CudaFfi, CUDA_FFI_01_enum_values_follow_the_cuda_headers) {
  EXPECT_EQ(static_cast<int>(ExternalMemoryHandleType::OpaqueFd), 1);
  EXPECT_EQ(static_cast<int>(ExternalMemoryHandleType::D3D12Resource), 5);
  EXPECT_EQ(static_cast<int>(ExternalMemoryHandleType::D3D11Resource), 6);
  EXPECT_EQ(static_cast<int>(ExternalSemaphoreHandleType::D3D12Fence), 4);
  EXPECT_EQ(static_cast<int>(ExternalSemaphoreHandleType::D3D11Fence), 5);
  EXPECT_EQ(kExternalMemoryDedicated, 1u);
  EXPECT_EQ(kGraphicsRegisterFlagsNone, 0u);
  EXPECT_EQ(static_cast<int>(ChannelFormatKind::Unsigned), 1);
  EXPECT_EQ(static_cast<int>(ChannelFormatKind::Float), 2);
}

TEST(CudaFfi, zero_fill_clears_padding_and_the_reserved_tail) {
  ExternalMemoryHandleDesc d;
  std::memset(&d, 0xAB, sizeof d);
  zero_fill(d);
  const unsigned char *bytes = reinterpret_cast<const unsigned char *>(&d);
  for (std::size_t i = 0; i < sizeof d; ++i)
    ASSERT_EQ(bytes[i], 0u) << "byte " << i;
}
