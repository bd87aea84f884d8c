//===- ApplyKernelMarks.cpp - memopt-apply-kernel-marks -------------------===//
//
// Thin pass over applyDeviceKernelMarks
// (lib/KernelMarks/DeviceKernelMarks.cpp), which memopt-compile --kernel-marks
// runs on the imported model: here for IR written earlier, such as a plan a GPU
// run has just measured.
//
//===----------------------------------------------------------------------===//
#include "memopt/Probe/DeviceKernelMarks.h"
#include "memopt/Transforms/Passes.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_APPLYKERNELMARKS
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
struct ApplyKernelMarksPass
    : public mlir::memopt::impl::ApplyKernelMarksBase<ApplyKernelMarksPass> {
  using ApplyKernelMarksBase::ApplyKernelMarksBase;

  void runOnOperation() override {
    if (file.empty() && requests.empty()) {
      getOperation().emitError(
          "memopt-apply-kernel-marks needs file= (a marks file) or "
          "requests= (where to write the calls to measure)");
      return signalPassFailure();
    }
    std::string error;
    if (failed(applyDeviceKernelMarks(getOperation(), {device, file, requests},
                                      error))) {
      getOperation().emitError(error);
      return signalPassFailure();
    }
  }
};
} // namespace
