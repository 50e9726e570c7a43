// SPDX-License-Identifier: Apache-2.0
// D3D11 texture storage on the software reference device: the cost of a CPU
// map through the staging path (copy texture → staging, map) against the
// host-buffer path (a write-only tensor's persistent buffer), the cost of
// one poll of a non-blocking map while the copy is "still drawing", and
// memcpy of the same bytes as the floor. The software device's copies are
// memcpy, so this measures our overhead around them, not a GPU.
//
//   ./build/tests/bench/bench-d3d11 [N [BATCHES]]   # defaults 200 3

#include "bench_util.hpp"

#include <tensormem/d3d11_storage.hpp>
#include <tensormem/internal/d3d11_software_device.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace tensormem;
using tmbench::time_each;

namespace {

std::shared_ptr<D3d11TextureStorage> make(std::shared_ptr<D3d11Context> ctx, std::uint32_t w, std::uint32_t h,
                                          CpuAccess access) {
  auto s = D3d11TextureStorage::allocate_image(std::move(ctx), PixelFormat::RGBA, DType::U8, w, h, access);
  if (!s)
    tmbench::die("bench-d3d11", s.error().message());
  return *s;
}

} // namespace

int main(int argc, char **argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200;
  if (argc > 2)
    tmbench::g_batches = std::atoi(argv[2]);
  SoftwareD3d11Device::Options options;
  options.still_drawing_polls = 1u << 30; // a poll never finds the copy done
  auto polled_device = *SoftwareD3d11Device::create(options);
  auto polled_ctx = *D3d11Context::create(polled_device);
  auto ctx = *D3d11Context::create(*SoftwareD3d11Device::create());

  std::printf("%-12s %-44s %10s %10s %10s\n", "size", "operation", "median us", "p99 us", "MB/s");
  for (auto [w, h] : {std::pair{64u, 64u}, std::pair{640u, 480u}, std::pair{1920u, 1080u}}) {
    const double mb = double(w) * h * 4 / 1e6;
    char size[16];
    std::snprintf(size, sizeof size, "%ux%u", w, h);
    auto readable = make(ctx, w, h, CpuAccess::ReadWrite);
    auto write_only = make(ctx, w, h, CpuAccess::Write);
    auto polled = make(polled_ctx, w, h, CpuAccess::ReadWrite);
    std::vector<std::byte> src(std::size_t(w) * h * 4, std::byte{1}), dst(src.size());
    volatile unsigned sink = 0;

    auto row = [&](const char *what, tmbench::Stats s, bool bandwidth) {
      std::printf("%-12s %-44s %10.1f %10.1f %10.0f\n", size, what, s.median, s.p99,
                  bandwidth ? mb / (s.median / 1e6) : 0.0);
    };
    row("memcpy of the frame (floor)", time_each(n, [&] { std::memcpy(dst.data(), src.data(), src.size()); }), true);
    row("read map, staging path (copy + map + unmap)",
        time_each(n,
                  [&] {
                    auto pin = readable->map(CpuAccess::Read);
                    sink = sink + unsigned(std::to_integer<int>(pin->data()[0]));
                  }),
        true);
    row("write map, staging path (map + copy back)",
        time_each(n,
                  [&] {
                    auto pin = readable->map(CpuAccess::ReadWrite);
                    pin->data()[0] = std::byte{2};
                  }),
        true);
    row("write map, host-buffer path (map + upload)",
        time_each(n,
                  [&] {
                    auto pin = write_only->map(CpuAccess::Write);
                    pin->data()[0] = std::byte{2};
                  }),
        true);
    row("read map, host-buffer path (publishes nothing)",
        time_each(n,
                  [&] {
                    auto pin = write_only->map(CpuAccess::Read);
                    sink = sink + unsigned(std::to_integer<int>(pin->data()[0]));
                  }),
        false);
    // The first poll queues and submits the copy; every later one only
    // re-attempts the map (D3D-TRY-02), which is what a polling loop pays.
    (void)polled->map(CpuAccess::Read, MapState::Wait::NoWait);
    row("try_map poll while still drawing",
        time_each(n,
                  [&] {
                    auto pin = polled->map(CpuAccess::Read, MapState::Wait::NoWait);
                    sink = sink + (pin ? 1u : 0u);
                  }),
        false);
  }
  std::printf("software-device copies run: %llu (the polls above queued none)\n",
              static_cast<unsigned long long>(polled_device->copies_run()));
  return 0;
}
