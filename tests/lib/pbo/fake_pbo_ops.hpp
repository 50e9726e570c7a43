// SPDX-License-Identifier: Apache-2.0
// PboOps fakes of the spec's PBO tests (§2): counting (a fixed byte array,
// asserts every map asks for its whole length), null (success with a null
// address), short (success with half the bytes), failing (InvalidOperation)
// and disconnected (Disconnected). All count their calls.
#pragma once

#include <tensormem/pbo_storage.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace tmtest {

enum class PboFake { Counting, Null, Short, Failing, Disconnected };

class FakePboOps final : public tensormem::PboOps {
public:
  FakePboOps(std::size_t size, PboFake mode) : mode_(mode), bytes_(size) {}
  static std::shared_ptr<FakePboOps> make(std::size_t size, PboFake mode = PboFake::Counting) {
    return std::make_shared<FakePboOps>(size, mode);
  }

  tensormem::Result<tensormem::BackendMapping> map_buffer(std::uint32_t buffer_id, std::size_t size,
                                                          tensormem::CpuAccess access) noexcept override;
  tensormem::Result<void> unmap_buffer(std::uint32_t buffer_id) noexcept override;
  void delete_buffer(std::uint32_t buffer_id) noexcept override;

  // Byte i = i mod 256, so a window at the wrong origin cannot match (HAZ-70).
  void fill_ramp();
  void fill(std::uint8_t value);
  std::vector<std::byte> &bytes() { return bytes_; }

  std::atomic<int> maps{0};
  std::atomic<int> unmaps{0};
  std::atomic<int> deletes{0};
  // Maps whose size differed from the array, and unmaps without a map.
  std::atomic<int> violations{0};
  std::atomic<std::uint32_t> last_id{0};
  std::atomic<tensormem::CpuAccess> last_access{tensormem::CpuAccess::None};

private:
  PboFake mode_;
  std::vector<std::byte> bytes_;
  std::atomic<int> live_{0};
};

} // namespace tmtest
