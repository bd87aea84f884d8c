//===- RuntimeLibrary.cpp - Load libmemopt_runtime at run time ------------===//
#include "memopt/Conversion/RuntimeLibrary.h"
#include "memopt/Conversion/FatalSignalGuard.h"

#include "llvm/ADT/ScopeExit.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <exception>
#include <mutex>

using namespace mlir::memopt;

static constexpr const char *kRuntimeFile = "libmemopt_runtime.so";

/// Any function of this library: its address finds the executable when
/// /proc/self/exe is not there.
static void anchor() {}

std::vector<std::string> mlir::memopt::runtimeLibraryCandidates() {
  std::vector<std::string> paths;
  if (const char *env = std::getenv("MEMOPT_RUNTIME_LIB"); env && *env)
    paths.push_back(env);
  std::string executable = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&anchor));
  if (executable.empty())
    return paths;
  llvm::SmallString<256> prefix(llvm::sys::path::parent_path(executable));
  llvm::sys::path::remove_filename(prefix); // bin/ -> the prefix
  for (const char *folder : {"lib", "_lib"}) {
    llvm::SmallString<256> path(prefix);
    llvm::sys::path::append(path, folder, kRuntimeFile);
    paths.push_back(std::string(path));
  }
  return paths;
}

static llvm::Expected<std::string> load() {
  std::vector<std::string> candidates = runtimeLibraryCandidates();
  for (const std::string &path : candidates) {
    if (!llvm::sys::fs::is_regular_file(path))
      continue;
    std::string error;
    // Kept for the process's life: the operators it registers must outlive
    // every module that calls them.
    llvm::sys::DynamicLibrary library =
        llvm::sys::DynamicLibrary::getPermanentLibrary(path.c_str(), &error);
    if (!library.isValid())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "cannot load the runtime library '%s': %s",
                                     path.c_str(), error.c_str());
    return path;
  }
  if (candidates.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "%s not found (MEMOPT_RUNTIME_LIB is not set and this executable's "
        "own path is unknown)",
        kRuntimeFile);
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "%s not found (looked at %s; set MEMOPT_RUNTIME_LIB)", kRuntimeFile,
      llvm::join(candidates, ", ").c_str());
}

llvm::Expected<std::string> mlir::memopt::loadRuntimeLibrary() {
  static std::once_flag once;
  static std::string path, error;
  std::call_once(once, [] {
    llvm::Expected<std::string> loaded = load();
    if (loaded)
      path = *loaded;
    else
      error = llvm::toString(loaded.takeError());
  });
  if (!error.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  return path;
}

/// The library being loaded, for the terminate handler.
static std::string loadingLibrary;

/// A library whose registration throws (a second TORCH_LIBRARY for the same
/// namespace: two builds of one extension) throws from its static
/// initializers, which nothing can catch across dlopen: std::terminate. Its
/// message is the error.
[[noreturn]] static void reportThrowingInitializer() {
  std::string why = "its initialization threw";
  if (std::exception_ptr thrown = std::current_exception()) {
    try {
      std::rethrow_exception(thrown);
    } catch (const std::exception &error) {
      // c10::Error's what() continues with a backtrace after the first line.
      why = llvm::StringRef(error.what()).split('\n').first.trim().str();
    } catch (...) {
    }
  }
  llvm::errs() << "memopt: error: cannot load operator library '"
               << loadingLibrary << "': " << why << "\n";
  llvm::errs().flush();
  std::_Exit(1);
}

llvm::Error mlir::memopt::loadOperatorLibrary(llvm::StringRef path) {
  loadingLibrary = path.str();
  std::terminate_handler previous =
      std::set_terminate(reportThrowingInitializer);
  auto restore = llvm::make_scope_exit([&] { std::set_terminate(previous); });
  FatalSignalGuard guard("memopt: error: cannot load operator library '" +
                             path.str() + "': its initialization crashed (",
                         ")");
  // dlopen looks a bare name up on the library path; a file of that name
  // here is what a user on the command line means.
  llvm::SmallString<256> file(path);
  if (!path.contains('/') && llvm::sys::fs::exists(path))
    llvm::sys::fs::make_absolute(file);
  std::string error;
  // An operator library's static initializers register with the process's
  // dispatcher: it is never unloaded, like the runtime.
  llvm::sys::DynamicLibrary library =
      llvm::sys::DynamicLibrary::getPermanentLibrary(file.c_str(), &error);
  if (library.isValid())
    return llvm::Error::success();
  // dlerror() starts with the path it was given; say it once.
  llvm::StringRef reason(error);
  if (reason.consume_front(file))
    reason = reason.ltrim(": ");
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(), "cannot load operator library '%s': %s",
      path.str().c_str(), reason.trim().str().c_str());
}
