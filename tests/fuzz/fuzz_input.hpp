// SPDX-License-Identifier: Apache-2.0
/* What every fuzz target shares: a reader that turns the fuzzer's bytes into
 * choices (the same bytes always give the same choices, and running out of
 * bytes gives zeros, never an error), and the one check macro, which aborts
 * in every build type so libFuzzer reports it as a crash and the replay test
 * (replay_main.cpp) fails. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define FUZZ_CHECK(cond, ...)                                                                                          \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      std::fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__, __LINE__, #cond);                               \
      std::fprintf(stderr, __VA_ARGS__);                                                                               \
      std::fputc('\n', stderr);                                                                                        \
      std::abort();                                                                                                    \
    }                                                                                                                  \
  } while (0)

namespace tensormem_fuzz {

class FuzzInput {
public:
  FuzzInput(const std::uint8_t *data, std::size_t size) : p_(data), n_(size) {}

  bool empty() const { return n_ == 0; }
  std::size_t left() const { return n_; }

  std::uint8_t u8() {
    if (n_ == 0)
      return 0;
    --n_;
    return *p_++;
  }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(u16()) | (static_cast<std::uint32_t>(u16()) << 16); }
  std::uint64_t u64() { return static_cast<std::uint64_t>(u32()) | (static_cast<std::uint64_t>(u32()) << 32); }
  bool flag() { return (u8() & 1) != 0; }
  /* 0 .. n-1 (n > 0). */
  std::uint32_t pick(std::uint32_t n) { return n <= 256 ? u8() % n : u32() % n; }
  /* lo .. hi, inclusive. */
  std::uint32_t range(std::uint32_t lo, std::uint32_t hi) { return lo + pick(hi - lo + 1); }
  /* Any bit pattern: NaN, infinities and denormals included. */
  float f32_bits() {
    const std::uint32_t bits = u32();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  /* Fills `out` with the next bytes, repeating them when fewer are left
   * (zeros when none are). */
  void fill(std::uint8_t *out, std::size_t size) {
    if (n_ == 0) {
      std::memset(out, 0, size);
      return;
    }
    const std::size_t take = size < n_ ? size : n_;
    for (std::size_t i = 0; i < size; ++i)
      out[i] = p_[i % take];
    p_ += take;
    n_ -= take;
  }
  /* A string of at most `max` of the next bytes, ending at the first NUL. */
  std::string text(std::size_t max) {
    std::string s;
    while (n_ > 0 && s.size() < max) {
      const char c = static_cast<char>(u8());
      if (c == '\0')
        break;
      s.push_back(c);
    }
    return s;
  }

private:
  const std::uint8_t *p_;
  std::size_t n_;
};

} // namespace tensormem_fuzz
