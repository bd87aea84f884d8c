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
