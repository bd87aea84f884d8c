//===- KernelMarks.h - what the probe measured of one call ------*- C++ -*-===//
//
// The numbers the kernel probe measures for one operator call and keeps in
// its cache. Plain C++ (neither MLIR nor LibTorch), shared by the side that
// reads the IR and the side that runs the kernels.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_PROBE_KERNELMARKS_H
#define MEMOPT_LIB_PROBE_KERNELMARKS_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <vector>

namespace memopt::probe {

enum class ElementKind { F32, F64, F16, BF16 };

/// Writes `[v0,v1,...,]`: a shape or integer list in a call's key.
inline void writeKeyList(std::ostream &os, const std::vector<int64_t> &values) {
  os << '[';
  for (int64_t v : values)
    os << v << ',';
  os << ']';
}

/// Bytes above what was live before each kernel (see KernelHighWaterAttr);
/// -1 where not measured.
struct KernelMarks {
  int64_t forward = -1;
  std::array<int64_t, 4> backward{-1, -1, -1, -1}; // by gradient mask
  /// Ops whose autograd graph the probe measures whole (recurrent layers):
  /// bytes of new tensors the forward keeps for backward, beyond its
  /// results, and which operands it keeps (bit k: operand group k).
  int64_t saved = -1;
  int64_t retained = -1;

  /// Takes every mark `other` measured (>= 0), keeps the others.
  void fillFrom(const KernelMarks &other) {
    if (other.forward >= 0)
      forward = other.forward;
    for (std::size_t m = 0; m < backward.size(); ++m)
      if (other.backward[m] >= 0)
        backward[m] = other.backward[m];
    if (other.saved >= 0)
      saved = other.saved;
    if (other.retained >= 0)
      retained = other.retained;
  }
};

} // namespace memopt::probe

#endif // MEMOPT_LIB_PROBE_KERNELMARKS_H
