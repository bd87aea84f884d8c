//===- ProbeCache.h - kernel marks kept between compiles --------*- C++ -*-===//
//
// A convolution's marks depend only on the call and on what picks its
// kernels: the PyTorch release, oneDNN's instruction-set limit, whether
// oneDNN is enabled, the processor. The cache keeps them in one text file
// (one line per measurement, appended) so that compiling the same model
// again, or another with the same layers, runs no kernel twice.
//
//   MEMOPT_KERNEL_PROBE_CACHE   the file (default
//                               $XDG_CACHE_HOME/memopt/kernel-probe.txt or
//                               ~/.cache/memopt/kernel-probe.txt); empty or
//                               "off": no cache
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_PROBE_PROBECACHE_H
#define MEMOPT_LIB_PROBE_PROBECACHE_H

#include "ConvolutionCall.h"
#include "MarksLine.h"

#include <string>
#include <unordered_map>

namespace memopt::probe {

class ProbeCache {
public:
  /// Reads the file named by the environment (nothing when there is none).
  ProbeCache();

  /// The marks known for `key` (-1 where none is).
  KernelMarks lookup(const std::string &key) const;
  /// Records `marks` for `key`, in memory and (best effort) in the file.
  void store(const std::string &key, const KernelMarks &marks);

private:
  std::string path_;    // empty: no file
  std::string context_; // what picks kernels on this machine (with a file)
  bool madeFolder_ = false;
  std::unordered_map<std::string, KernelMarks> marks_;
};

} // namespace memopt::probe

#endif // MEMOPT_LIB_PROBE_PROBECACHE_H
