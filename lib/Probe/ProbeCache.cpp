//===- ProbeCache.cpp - kernel marks kept between compiles ----------------===//
//
// Line format: `<context>\t<call key>\t<forward> <backward x4>` and, for
// recurrent layers, ` <saved> <retained>`. Lines of another context, or
// that do not parse, are skipped; a later line for the same call fills in
// what an earlier one lacked.
//
//===----------------------------------------------------------------------===//
#include "ProbeCache.h"

#include "memopt/Config/TorchVersion.h"

#include <ATen/Context.h>

#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace ::memopt::probe;

static std::string getEnv(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

static std::string getDefaultPath() {
  std::string base = getEnv("XDG_CACHE_HOME");
  if (base.empty()) {
    std::string home = getEnv("HOME");
    if (home.empty())
      return "";
    base = home + "/.cache";
  }
  return base + "/memopt/kernel-probe.txt";
}

static std::string getProcessorName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 1);
  return "unknown";
}

/// Everything besides the call that chooses the kernels (and so their
/// buffers), in one field without tabs.
static std::string getContext() {
  std::ostringstream os;
  os << "v1 torch=" << MEMOPT_TORCH_VERSION
     << " mkldnn=" << at::globalContext().userEnabledMkldnn()
     << " isa=" << getEnv("ONEDNN_MAX_CPU_ISA") << '/'
     << getEnv("DNNL_MAX_CPU_ISA") << " cpu=" << getProcessorName();
  std::string context = os.str();
  for (char &c : context)
    if (c == '\t' || c == '\n')
      c = ' ';
  return context;
}

ProbeCache::ProbeCache() {
  const char *configured = std::getenv("MEMOPT_KERNEL_PROBE_CACHE");
  path_ = configured ? configured : getDefaultPath();
  if (path_ == "off")
    path_.clear();
  if (path_.empty())
    return; // no file: no context to read /proc/cpuinfo for
  context_ = getContext();
  std::ifstream file(path_);
  std::string line, context, key;
  while (std::getline(file, line)) {
    KernelMarks marks;
    if (parseMarksLine(line, context, key, marks) && context == context_)
      marks_[key].fillFrom(marks);
  }
}

KernelMarks ProbeCache::lookup(const std::string &key) const {
  auto it = marks_.find(key);
  return it == marks_.end() ? KernelMarks() : it->second;
}

void ProbeCache::store(const std::string &key, const KernelMarks &marks) {
  marks_[key].fillFrom(marks);
  if (path_.empty())
    return;
  size_t slash = path_.rfind('/');
  if (!madeFolder_ && slash != std::string::npos && slash > 0) {
    // mkdir -p of the folder, once; failures show up as the open failing.
    for (size_t at = path_.find('/', 1); at != std::string::npos && at <= slash;
         at = path_.find('/', at + 1))
      ::mkdir(path_.substr(0, at).c_str(), 0755);
    madeFolder_ = true;
  }
  std::string text = formatMarksLine(context_, key, marks) + "\n";
  // One append of a whole line: concurrent compiles do not interleave.
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    return; // a cache that cannot be written only costs time
  ssize_t written = ::write(fd, text.data(), text.size());
  (void)written;
  ::close(fd);
}
