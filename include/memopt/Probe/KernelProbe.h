//===- KernelProbe.h - measure kernels' memory on this machine --*- C++ -*-===//
//
// The training-memory model's workspace formulas describe one PyTorch on
// one CPU. memopt-compile instead runs each convolution (and recurrent
// layer stack) of the model once,
// at its static shapes, with the PyTorch it is built against, and records
// what the kernels allocated (`high_water` on the op), which the model then
// uses. MLIR-only header: the LibTorch side stays in lib/Probe.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PROBE_KERNELPROBE_H
#define MEMOPT_PROBE_KERNELPROBE_H

#include "memopt/Conversion/FatalSignalGuard.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::memopt {

struct TorchScriptSource;

struct KernelProbeOptions {
  /// Intra-op threads the kernels run with (as training will).
  int threads = 1;
  /// The model the IR was imported from, when at hand: integer module
  /// attributes the IR reads (`self.modes`, a slice's end) take their
  /// values there, so that views of them are made as the model makes them.
  const TorchScriptSource *source = nullptr;
};

struct KernelProbeSummary {
  unsigned measured = 0; // distinct calls whose kernels ran now
  unsigned cached = 0;   // distinct calls whose marks the cache file had
  unsigned reused = 0;   // ops that took an earlier op's marks
  unsigned skipped = 0;  // ops left to the formulas (shape or args unknown)
};

/// Measures every convolution and recurrent layer stack (aten::lstm, gru,
/// rnn_tanh, rnn_relu) in `module` whose shapes and arguments are static and
/// sets its `high_water` (recurrent layers: also `measured_saves`, what
/// autograd keeps); only the backward gradient mask the model will ask for
/// is run, and marks kept from earlier compiles on this machine
/// (lib/Probe/ProbeCache.h) are not measured again. A call PyTorch refuses
/// is reported as an error at the op (the model would fail the same way in
/// training).
FailureOr<KernelProbeSummary>
probeKernelHighWaters(ModuleOp module, const KernelProbeOptions &options);

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

/// While alive, a crash inside PyTorch as the probe runs `op` (a `what`:
/// "convolution", "recurrent layer"...) prints one line naming the op's
/// module path and source line, and exits 1. The probe runs the model's own
/// kernels at its shapes, and kernel libraries can fault there (PyTorch
/// 2.6's oneDNN on some CPUs: docs/pytorch2.md); eager training runs the
/// same kernels.
class KernelCrashGuard : public FatalSignalGuard {
public:
  KernelCrashGuard(Operation *op, StringRef what);
};

/// The intra-op threads a PyTorch process started in this environment runs
/// with (OMP_NUM_THREADS, else the cores): what training gets unless it
/// calls torch.set_num_threads.
int getDefaultIntraOpThreads();

} // namespace mlir::memopt

#endif // MEMOPT_PROBE_KERNELPROBE_H
