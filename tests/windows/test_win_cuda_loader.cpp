// SPDX-License-Identifier: Apache-2.0
// The Windows branch of the CUDA runtime loader, cross-built with MinGW-w64
// and run under Wine: the cudart64_* ladder, %CUDA_PATH%\bin, LoadLibraryW
// with UTF-8 paths, the module path GetModuleFileNameW reports, rejected
// candidates and the device probe (CUDA-LOAD-02..07 on Windows).
//
// The "runtime" is tests/fakes/fake_cudart built as a DLL and copied, per
// test, under the names the real one ships with. Windows hands back an
// already-loaded module for a bare DLL name, and the loader never unloads a
// runtime it accepted, so meson runs every case in a process of its own
// (tests/windows/meson.build lists them).
#include <tensormem/cuda_handle.hpp>
#include <tensormem/internal/cuda_runtime.hpp>

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

using namespace tensormem;

namespace {

std::string utf8(const std::wstring &text) {
  if (text.empty())
    return {};
  int n = WideCharToMultiByte(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), nullptr, 0, nullptr, nullptr);
  std::string out(static_cast<std::size_t>(n), '\0');
  WideCharToMultiByte(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), out.data(), n, nullptr, nullptr);
  return out;
}

// Windows paths compare without regard to case (ASCII is enough here).
std::string lower(std::string text) {
  for (char &c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::wstring directory_of(const std::wstring &path) { return path.substr(0, path.find_last_of(L"\\/")); }

std::wstring own_directory() {
  wchar_t buf[MAX_PATH];
  DWORD n = GetModuleFileNameW(nullptr, buf, MAX_PATH);
  return directory_of(std::wstring(buf, n));
}

std::wstring get_env(const wchar_t *name, bool *present = nullptr) {
  wchar_t buf[8192];
  DWORD n = GetEnvironmentVariableW(name, buf, 8192);
  if (present)
    *present = n != 0 || GetLastError() != ERROR_ENVVAR_NOT_FOUND;
  return std::wstring(buf, n < 8192 ? n : 0);
}

// _wputenv_s changes the C runtime's copy and the process environment block
// together: the loader reads the latter, the fake runtime (getenv) the former.
void set_env(const wchar_t *name, const std::wstring &value) { _wputenv_s(name, value.c_str()); }
void unset_env(const wchar_t *name) { _wputenv_s(name, L""); }

void make_directories(const std::wstring &path) {
  for (std::size_t at = path.find_first_of(L"\\/", 3); at != std::wstring::npos;
       at = path.find_first_of(L"\\/", at + 1))
    CreateDirectoryW(path.substr(0, at).c_str(), nullptr);
  CreateDirectoryW(path.c_str(), nullptr);
}

// A control function of a loaded copy of the fake runtime.
template <typename F> F fake_control(const std::wstring &module_path, const char *name) {
  HMODULE module = GetModuleHandleW(module_path.c_str());
  if (!module)
    return nullptr;
  return reinterpret_cast<F>(reinterpret_cast<void *>(GetProcAddress(module, name)));
}

unsigned long fake_calls(const std::wstring &module_path, const char *fn) {
  auto calls = fake_control<unsigned long (*)(const char *)>(module_path, "fake_cudart_calls");
  return calls ? calls(fn) : 0;
}

class WinLoader : public ::testing::Test {
protected:
  void SetUp() override {
    for (const wchar_t *name : kSaved) {
      bool present = false;
      saved_.push_back(get_env(name, &present));
      present_.push_back(present);
    }
    unset_env(L"TENSORMEM_CUDART");
    unset_env(L"CUDA_PATH");
    unset_env(L"FAKE_CUDART_DEVICE_COUNT");
    // A fresh directory per case, under TM_WIN_SCRATCH (the wrapper points it
    // into the build tree) or the temporary directory.
    std::wstring root = get_env(L"TM_WIN_SCRATCH");
    if (root.empty()) {
      wchar_t tmp[MAX_PATH];
      root = std::wstring(tmp, GetTempPathW(MAX_PATH, tmp)) + L"tensormem-win-tests";
    }
    const ::testing::TestInfo *info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        std::string(info->test_suite_name()) + "." + info->name() + "." + std::to_string(GetCurrentProcessId());
    dir_ = root + L"\\" + std::wstring(name.begin(), name.end()); // test names are ASCII
    make_directories(dir_);
  }

  void TearDown() override {
    for (std::size_t i = 0; i < std::size(kSaved); ++i)
      present_[i] ? set_env(kSaved[i], saved_[i]) : unset_env(kSaved[i]);
  }

  // Copies a DLL built beside this program to `relative` under the case's
  // directory; returns the full path.
  std::wstring place(const wchar_t *built, const std::wstring &relative) {
    std::wstring target = dir_ + L"\\" + relative;
    make_directories(directory_of(target));
    std::wstring source = own_directory() + L"\\" + built;
    EXPECT_TRUE(CopyFileW(source.c_str(), target.c_str(), FALSE))
        << "copying " << utf8(source) << " to " << utf8(target) << ": error " << GetLastError();
    return target;
  }
  std::wstring place_runtime(const std::wstring &relative) { return place(L"fakecudart.dll", relative); }
  std::wstring place_stale(const std::wstring &relative) { return place(L"fakecudart_partial.dll", relative); }

  void prepend_to_path(const std::wstring &dir) { set_env(L"PATH", dir + L";" + get_env(L"PATH")); }

  static std::shared_ptr<const CudaRuntime> load_defaults() {
    std::vector<std::string> candidates = CudaRuntime::default_candidates();
    return CudaRuntime::load(candidates);
  }

  static constexpr const wchar_t *kSaved[] = {L"TENSORMEM_CUDART", L"CUDA_PATH", L"FAKE_CUDART_DEVICE_COUNT", L"PATH"};
  std::vector<std::wstring> saved_;
  std::vector<bool> present_;
  std::wstring dir_;
};

// "Ĉuda" and "Gerät": paths outside the ANSI code page reach LoadLibraryW
// intact only if the UTF-8 → UTF-16 conversion is right.
const std::wstring kWideDir = L"\u0108uda Ger\u00e4t";

} // namespace

TEST_F(WinLoader, CUDA_LOAD_02_default_candidates_are_the_cudart64_ladder) {
  std::vector<std::string> expected = {"cudart64_13.dll", "cudart64_12.dll", "cudart64_110.dll"};
  EXPECT_EQ(CudaRuntime::default_candidates(), expected);
}

TEST_F(WinLoader, CUDA_LOAD_02_cuda_path_adds_its_bin_directory_after_the_bare_names) {
  set_env(L"CUDA_PATH", L"C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v13.0");
  const std::string bin = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v13.0\\bin\\";
  std::vector<std::string> expected = {"cudart64_13.dll",       "cudart64_12.dll",       "cudart64_110.dll",
                                       bin + "cudart64_13.dll", bin + "cudart64_12.dll", bin + "cudart64_110.dll"};
  EXPECT_EQ(CudaRuntime::default_candidates(), expected);
}

TEST_F(WinLoader, CUDA_LOAD_02_TENSORMEM_CUDART_alone_is_tried_and_may_name_a_non_ascii_path) {
  std::wstring path = L"D:\\" + kWideDir + L"\\cudart64_13.dll";
  set_env(L"TENSORMEM_CUDART", path);
  set_env(L"CUDA_PATH", L"C:\\CUDA");
  std::vector<std::string> expected = {utf8(path)};
  EXPECT_EQ(CudaRuntime::default_candidates(), expected);
}

TEST_F(WinLoader, CUDA_LOAD_03_a_full_non_ascii_path_loads_and_reports_itself) {
  std::wstring path = place_runtime(kWideDir + L"\\cudart64_13.dll");
  std::vector<std::string> candidates = {utf8(path)};
  auto rt = CudaRuntime::load(candidates);
  ASSERT_TRUE(rt->loaded()) << rt->reason();
  EXPECT_TRUE(rt->available()) << rt->reason();
  EXPECT_EQ(rt->device_count(), 1);
  EXPECT_EQ(rt->runtime_path(), utf8(path));
  EXPECT_TRUE(rt->reason().empty()) << rt->reason();
  EXPECT_EQ(fake_calls(path, "cudaGetDeviceCount"), 1u);
}

TEST_F(WinLoader, CUDA_LOAD_03_a_bare_name_reports_the_file_windows_loaded) {
  std::wstring path = place_runtime(L"runtime dir\\cudart64_12.dll");
  prepend_to_path(directory_of(path));
  auto rt = load_defaults();
  ASSERT_TRUE(rt->available()) << rt->reason();
  // Not the bare candidate: the file the system found on PATH, as
  // GetModuleFileNameW names it.
  EXPECT_EQ(lower(rt->runtime_path()), lower(utf8(path)));
  EXPECT_NE(rt->runtime_path(), "cudart64_12.dll");
}

TEST_F(WinLoader, CUDA_LOAD_04_a_stale_candidate_is_closed_and_the_next_one_loads) {
  std::wstring stale = place_stale(L"old\\cudart64_13.dll");
  std::wstring good = place_runtime(L"new\\cudart64_110.dll");
  prepend_to_path(directory_of(good));
  prepend_to_path(directory_of(stale));
  auto rt = load_defaults();
  ASSERT_TRUE(rt->available()) << rt->reason();
  EXPECT_EQ(lower(rt->runtime_path()), lower(utf8(good)));
  // The stale library was loaded, found lacking, and unloaded again.
  EXPECT_EQ(GetModuleHandleW(L"cudart64_13.dll"), nullptr);
  EXPECT_NE(GetModuleHandleW(L"cudart64_110.dll"), nullptr);
}

TEST_F(WinLoader, CUDA_LOAD_04_only_stale_candidates_leave_cuda_unavailable_naming_the_symbol) {
  std::wstring stale = place_stale(L"cudart-stale.dll");
  set_env(L"TENSORMEM_CUDART", stale);
  auto rt = load_defaults();
  EXPECT_FALSE(rt->loaded());
  EXPECT_FALSE(rt->available());
  EXPECT_NE(rt->reason().find("lacks cudaGraphicsGLRegisterBuffer"), std::string::npos) << rt->reason();
  EXPECT_TRUE(rt->runtime_path().empty());
  EXPECT_EQ(GetModuleHandleW(stale.c_str()), nullptr);
}

TEST_F(WinLoader, CUDA_LOAD_02_cuda_path_bin_is_tried_by_full_path_and_recorded_as_given) {
  std::wstring toolkit = dir_ + L"\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4";
  std::wstring path = place_runtime(L"NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\\bin\\cudart64_12.dll");
  set_env(L"CUDA_PATH", toolkit);
  auto rt = load_defaults();
  ASSERT_TRUE(rt->available()) << rt->reason();
  EXPECT_EQ(rt->runtime_path(), utf8(path));
}

TEST_F(WinLoader, CUDA_LOAD_07_no_runtime_anywhere_is_unavailable_naming_every_candidate) {
  auto rt = load_defaults();
  EXPECT_FALSE(rt->loaded());
  EXPECT_TRUE(rt->runtime_path().empty());
  for (const char *name : {"cudart64_13.dll", "cudart64_12.dll", "cudart64_110.dll"})
    EXPECT_NE(rt->reason().find(std::string(name) + " (LoadLibraryW failed (error 126))"), std::string::npos)
        << rt->reason();
  // Every primitive refuses without calling anything.
  char byte = 0;
  auto copied = rt->memcpy_host_to_device(&byte, &byte, 1);
  ASSERT_FALSE(copied);
  EXPECT_EQ(copied.error().kind(), ErrorKind::NotImplemented);
}

TEST_F(WinLoader, a_runtime_without_devices_is_loaded_but_unavailable) {
  set_env(L"FAKE_CUDART_DEVICE_COUNT", L"0");
  std::wstring path = place_runtime(L"cudart64_13.dll");
  std::vector<std::string> candidates = {utf8(path)};
  auto rt = CudaRuntime::load(candidates);
  EXPECT_TRUE(rt->loaded());
  EXPECT_FALSE(rt->available());
  EXPECT_NE(rt->reason().find("cudaGetDeviceCount failed"), std::string::npos) << rt->reason();
  EXPECT_NE(rt->reason().find("(cudaError 100)"), std::string::npos) << rt->reason();
  auto stream = rt->stream_create();
  ASSERT_FALSE(stream);
  EXPECT_EQ(stream.error().kind(), ErrorKind::NotImplemented);
  EXPECT_EQ(fake_calls(path, "cudaStreamCreate"), 0u);
}

TEST_F(WinLoader, CUDA_LOAD_01_the_process_runtime_comes_from_TENSORMEM_CUDART) {
  std::wstring path = place_runtime(L"process\\cudart64_13.dll");
  set_env(L"TENSORMEM_CUDART", path);
  auto rt = CudaRuntime::get();
  ASSERT_TRUE(rt->available()) << rt->reason();
  EXPECT_EQ(rt->runtime_path(), utf8(path));
  EXPECT_EQ(CudaRuntime::get().get(), rt.get());
  EXPECT_TRUE(cuda_available());
}

TEST_F(WinLoader, CUDA_PRIM_01_memcpy_and_streams_reach_the_runtime_through_the_table) {
  std::wstring path = place_runtime(L"cudart64_13.dll");
  std::vector<std::string> candidates = {utf8(path)};
  auto rt = CudaRuntime::load(candidates);
  ASSERT_TRUE(rt->available()) << rt->reason();
  Result<void *> allocated = rt->malloc(64);
  ASSERT_TRUE(allocated) << allocated.error().message();
  void *device = *allocated;
  std::string in = "bytes through a DLL loaded with LoadLibraryW";
  std::string out(in.size(), '\0');
  ASSERT_TRUE(rt->memcpy_host_to_device(device, in.data(), in.size()));
  ASSERT_TRUE(rt->memcpy_device_to_host(out.data(), device, out.size()));
  EXPECT_EQ(out, in);
  EXPECT_TRUE(rt->free(device));

  auto stream = rt->stream_create();
  ASSERT_TRUE(stream) << stream.error().message();
  EXPECT_TRUE(rt->stream_synchronize(*stream));
  rt->stream_destroy(*stream);
  EXPECT_EQ(fake_calls(path, "cudaMemcpy"), 2u);
  EXPECT_EQ(fake_calls(path, "cudaStreamDestroy"), 1u);
  // cudaGetErrorString resolved too: the text carries the runtime's words.
  EXPECT_NE(rt->error_text(1).find("(cudaError 1)"), std::string::npos);
  EXPECT_NE(rt->error_text(1), "cudaError 1");
}

TEST_F(WinLoader, a_dma_buf_import_is_refused_on_windows_without_calling_the_runtime) {
  std::wstring path = place_runtime(L"cudart64_13.dll");
  std::vector<std::string> candidates = {utf8(path)};
  auto rt = CudaRuntime::load(candidates);
  ASSERT_TRUE(rt->available()) << rt->reason();
  auto handle = CudaHandle::import_dma_fd(3, 4096, rt);
  ASSERT_FALSE(handle);
  EXPECT_EQ(handle.error().kind(), ErrorKind::NotImplemented);
  EXPECT_NE(handle.error().message().find("Linux only"), std::string::npos) << handle.error().message();
  EXPECT_EQ(fake_calls(path, "cudaImportExternalMemory"), 0u);
}
