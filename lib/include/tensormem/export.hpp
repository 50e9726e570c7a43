// SPDX-License-Identifier: Apache-2.0
#pragma once

// The library builds with hidden visibility; only what carries this macro is
// part of its ABI.
#if defined(_WIN32)
#if defined(TENSORMEM_BUILDING)
#define TENSORMEM_API __declspec(dllexport)
#else
#define TENSORMEM_API __declspec(dllimport)
#endif
#else
#define TENSORMEM_API __attribute__((visibility("default")))
#endif
