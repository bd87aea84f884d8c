//===- ProbeKernelHighWaters.cpp - the IR's kernels to the probe ----------===//
//
// Reads each convolution's and recurrent layer stack's static shapes and
// constant arguments off its `memopt.op`, has ConvolutionProbe.cpp or
// RecurrentProbe.cpp run it (once per distinct call), and records the
// result as the op's `high_water` (and, for recurrent layers,
// `measured_saves`). A kept `if` on tensor data gets the `measured_saves`
// of its branches (KeptBranchProbe.cpp), an operator the saved-tensor table
// does not know those of a run of it alone (UnknownOperatorProbe.cpp).
//
//===----------------------------------------------------------------------===//
#include "ConvolutionCallFromIR.h"
#include "GraphRun.h"
#include "KeptBranchProbe.h"
#include "ProbeCache.h"
#include "RecurrentCallFromIR.h"
#include "UnknownOperatorProbe.h"

#include "memopt/Conversion/OneLineDiagnostic.h"
#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Probe/KernelProbe.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <exception>
#include <optional>

using namespace mlir;
using namespace mlir::memopt;
using ::memopt::probe::ConvolutionCall;
using ::memopt::probe::KernelMarks;
using ::memopt::probe::RecurrentCall;

FailureOr<KernelProbeSummary>
mlir::memopt::probeKernelHighWaters(ModuleOp module,
                                    const KernelProbeOptions &options) {
  KernelProbeSummary summary;
  DenseSet<Value> grads = getGradValues(module);
  ModuleIntegersScope integers(options.source);
  ::memopt::probe::ProbeCache cache;
  llvm::StringMap<KernelMarks> measured;
  llvm::StringMap<GraphRunMarks> unknownSeen;
  // Runs `measure` unless the marks of `key` are known; null after
  // reporting PyTorch's refusal at `op`.
  auto measureOnce = [&](TorchOp op, const std::string &key, auto isComplete,
                         auto measure, StringRef what) -> KernelMarks * {
    auto [it, fresh] = measured.try_emplace(key, cache.lookup(key));
    KernelMarks &marks = it->second;
    bool complete = isComplete(marks);
    if (fresh)
      ++(complete ? summary.cached : summary.measured);
    else
      ++summary.reused;
    if (complete)
      return &marks;
    try {
      KernelCrashGuard guard(op, what);
      marks.fillFrom(measure(marks));
      cache.store(key, marks);
      return &marks;
    } catch (const c10::Error &error) {
      op.emitError() << "PyTorch refuses this " << what
                     << " at its shapes: " << error.what_without_backtrace();
    } catch (const std::exception &error) { // e.g. std::bad_alloc
      op.emitError() << "cannot run this " << what
                     << " to measure its kernels' memory: " << error.what();
    }
    return nullptr;
  };
  WalkResult walk = module.walk([&](TorchOp op) {
    if (op.getScript()) {
      KernelCrashGuard guard(op, "branch kept on tensor data");
      ++(probeKeptBranches(op, grads, options.threads) ? summary.measured
                                                       : summary.skipped);
      return WalkResult::advance();
    }
    if (isRecurrentOperator(op.getName())) {
      std::optional<RecurrentCall> call =
          getRecurrentCall(op, grads, options.threads);
      if (!call) {
        ++summary.skipped;
        return WalkResult::advance();
      }
      KernelMarks *marks = measureOnce(
          op, call->key(),
          [&](const KernelMarks &m) {
            return m.forward >= 0 &&
                   (!call->gradMask || (m.saved >= 0 && m.retained >= 0 &&
                                        m.backward[call->gradMask] >= 0));
          },
          [&](const KernelMarks &) {
            return ::memopt::probe::measureRecurrent(*call);
          },
          "recurrent layer");
      if (!marks)
        return WalkResult::interrupt();
      setRecurrentMarks(op, *call, *marks);
      return WalkResult::advance();
    }
    if (!isConvolutionOperator(op.getName())) {
      switch (probeUnknownOperator(op, grads, options.threads, unknownSeen)) {
      case UnknownOperatorProbe::NotApplicable:
        break;
      case UnknownOperatorProbe::Measured:
        ++summary.measured;
        break;
      case UnknownOperatorProbe::Reused:
        ++summary.reused;
        break;
      case UnknownOperatorProbe::Skipped:
        ++summary.skipped;
        break;
      }
      return WalkResult::advance();
    }
    std::optional<ConvolutionCall> call =
        getConvolutionCall(op, options.threads);
    if (!call) {
      ++summary.skipped;
      return WalkResult::advance();
    }
    unsigned mask = getConvolutionGradientMask(op, grads);
    KernelMarks *marks = measureOnce(
        op, call->key(),
        [&](const KernelMarks &m) {
          return m.forward >= 0 && (!mask || m.backward[mask] >= 0);
        },
        [&](const KernelMarks &m) {
          return ::memopt::probe::measureConvolution(
              *call, m.forward < 0,
              mask && m.backward[mask] < 0 ? 1u << mask : 0u);
        },
        "convolution");
    if (!marks)
      return WalkResult::interrupt();
    op.setHighWaterAttr(KernelHighWaterAttr::get(
        op.getContext(), marks->forward, marks->backward));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return summary;
}

mlir::memopt::KernelCrashGuard::KernelCrashGuard(Operation *op, StringRef what)
    : FatalSignalGuard(
          "memopt: error: PyTorch crashed (",
          (") running this " + what +
           " at its shapes, which memopt-compile does to measure its "
           "kernels' memory; eager training runs the same kernels (a fault "
           "in PyTorch's kernel libraries: docs/pytorch2.md)" +
           [&] {
             std::string where = describeLocation(op->getLoc());
             return where.empty() ? std::string() : ", at " + where;
           }())
              .str()) {}

int mlir::memopt::getDefaultIntraOpThreads() { return at::get_num_threads(); }
