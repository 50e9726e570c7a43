// SPDX-License-Identifier: Apache-2.0
// Cost of one CPU map through the shared MapState (heap storage, so the
// backend call itself is free and what remains is the state machine), with
// one thread and with several readers sharing a mapping. Prints a table; no
// assertion on time.
#include <tensormem/tensormem.hpp>

#include <benchmark/benchmark.h>

#include <optional>

using namespace tensormem;

namespace {

Tensor make(std::size_t bytes) { return std::move(Tensor::allocate({bytes}, DType::U8)).value(); }

void BM_map_unmap(benchmark::State &state) {
  const auto access = static_cast<CpuAccess>(state.range(0));
  Tensor t = make(1 << 20);
  for (auto _ : state) {
    auto m = t.map(access);
    benchmark::DoNotOptimize(m->data());
  }
  state.SetLabel(access_name(access));
}
BENCHMARK(BM_map_unmap)->Arg(static_cast<int>(CpuAccess::Read))->Arg(static_cast<int>(CpuAccess::ReadWrite));

// Readers on several threads: each map joins the shared mapping when another
// reader holds it, or maps the backend again when it was the last.
Tensor g_shared = make(1 << 20);
void BM_concurrent_readers(benchmark::State &state) {
  for (auto _ : state) {
    auto m = g_shared.map(CpuAccess::Read);
    benchmark::DoNotOptimize(m->data());
  }
}
BENCHMARK(BM_concurrent_readers)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

void BM_view(benchmark::State &state) {
  Tensor t = make(1 << 20);
  for (auto _ : state) {
    auto v = t.view(4096, {1024, 3});
    benchmark::DoNotOptimize(v->offset());
  }
}
BENCHMARK(BM_view);

#ifdef __linux__
// A memfd-backed DMA-BUF storage: the first map of a burst pays mmap plus the
// sync ioctl attempt; later maps reuse the mapping only while one is held.
void BM_dmabuf_map_unmap(benchmark::State &state) {
  DmaBufOptions options;
  options.source = DmaBufSource::Memfd;
  auto storage = std::move(DmaBufStorage::allocate(1 << 20, options)).value();
  Tensor t = std::move(Tensor::wrap(storage, {1 << 20}, DType::U8)).value();
  const bool hold = state.range(0) != 0;
  auto held = hold ? std::optional<HostView>(std::move(t.map(CpuAccess::Read)).value()) : std::nullopt;
  for (auto _ : state) {
    auto m = t.map(CpuAccess::Read);
    benchmark::DoNotOptimize(m->data());
  }
  state.SetLabel(hold ? "joins a held mapping" : "alone: sync only, the mapping is kept");
}
BENCHMARK(BM_dmabuf_map_unmap)->Arg(0)->Arg(1);
#endif

} // namespace

BENCHMARK_MAIN();
