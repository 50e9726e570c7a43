// SPDX-License-Identifier: Apache-2.0
// Timing for the plain benchmark programs: per-iteration samples, median and
// 99th percentile, best of several batches.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tmbench {

using Clock = std::chrono::steady_clock;

inline double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

/* Median, 99th percentile and mean of per-iteration times. */
struct Stats {
  double median = 0, p99 = 0, mean = 0;
};

inline Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, v.size() * 99 / 100)];
  double sum = 0;
  for (double x : v)
    sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

/* Every measurement is taken this many times and the best batch is printed:
 * the development machine is shared, and a batch that another process
 * interrupted says nothing about the code. */
inline int g_batches = 3;

/* One batch: a warm-up, then `n` timed calls of `fn`. */
template <typename Fn> Stats time_each_once(int n, Fn fn) {
  for (int i = 0; i < std::max(n / 20, 5); ++i)
    fn();
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto start = Clock::now();
    fn();
    samples.push_back(us_since(start));
  }
  return stats_of(std::move(samples));
}

/* The batch with the smallest median. */
template <typename Fn> Stats time_each(int n, Fn fn) {
  Stats best = time_each_once(n, fn);
  for (int b = 1; b < g_batches; ++b) {
    const Stats s = time_each_once(n, fn);
    if (s.median < best.median)
      best = s;
  }
  return best;
}

/* Ends the benchmark `program` with a message. */
[[noreturn]] inline void die(const char *program, const std::string &what) {
  std::fprintf(stderr, "%s: %s\n", program, what.c_str());
  std::exit(1);
}

} // namespace tmbench
