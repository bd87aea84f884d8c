//===- DeviceKernelMarks.h - kernel marks measured on a GPU -----*- C++ -*-===//
//
// A GPU's convolution buffers depend on the algorithm cuDNN picks there;
// the compiling machine can neither run nor derive them. The GPU's probe
// (bench/cuda_kernel_probe.py, memopt.wrap) measures the calls a model
// makes and writes a marks file; these put its marks on the IR. MLIR only
// (no LibTorch): memopt-compile and memopt-opt's memopt-apply-kernel-marks
// share it.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PROBE_DEVICEKERNELMARKS_H
#define MEMOPT_PROBE_DEVICEKERNELMARKS_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::memopt {

/// Kernel marks for a device this machine cannot run (a GPU), measured
/// there by `bench/cuda_kernel_probe.py` and kept in a marks file.
struct DeviceKernelMarksOptions {
  /// "cuda": the context every line of the file must name.
  std::string device;
  /// The marks file (one device's lines); empty: none.
  std::string marksPath;
  /// Where to append, one JSON object per line, each convolution call
  /// whose marks the file lacks, for the device's probe to measure;
  /// empty: nowhere.
  std::string requestsPath;
};

struct DeviceKernelMarksSummary {
  std::string context;    // what picked the kernels, as the file names it
  unsigned applied = 0;   // ops that took every mark they need
  unsigned requested = 0; // distinct calls the file lacks some mark of
  unsigned skipped = 0;   // ops left unpriced (shape or args unknown)
};

/// Sets the `high_water` of each convolution in `module` whose call the
/// marks file has measured (the gradient mask training asks for, as the
/// CPU probe does) and writes the calls it lacks to the requests file. On
/// failure (a file that cannot be read or written, lines of another device
/// or of several) returns failure with a one-line `error`.
FailureOr<DeviceKernelMarksSummary>
applyDeviceKernelMarks(ModuleOp module, const DeviceKernelMarksOptions &options,
                       std::string &error);

} // namespace mlir::memopt

#endif // MEMOPT_PROBE_DEVICEKERNELMARKS_H
