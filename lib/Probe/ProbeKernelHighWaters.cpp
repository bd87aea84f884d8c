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
#include "ConvolutionCall.h"
#include "GraphRun.h"
#include "KeptBranchProbe.h"
#include "ProbeCache.h"
#include "RecurrentCallFromIR.h"
#include "UnknownOperatorProbe.h"

#include "memopt/Conversion/OneLineDiagnostic.h"
#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Probe/KernelProbe.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <exception>
#include <optional>

using namespace mlir;
using namespace mlir::memopt;
using ::memopt::probe::ConvolutionCall;
using ::memopt::probe::ConvolutionForm;
using ::memopt::probe::ElementKind;
using ::memopt::probe::KernelMarks;
using ::memopt::probe::RecurrentCall;

static std::optional<ConvolutionForm> getForm(StringRef name) {
  return llvm::StringSwitch<std::optional<ConvolutionForm>>(name)
      .Cases("aten::conv1d", "aten::conv2d", "aten::conv3d",
             ConvolutionForm::Convolution)
      .Cases("aten::conv_transpose1d", "aten::conv_transpose2d",
             "aten::conv_transpose3d", ConvolutionForm::TransposedConvolution)
      .Cases("aten::convolution", "aten::_convolution",
             ConvolutionForm::General)
      .Default(std::nullopt);
}

static std::optional<ElementKind> getElementKind(Type type) {
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  return std::nullopt;
}

static bool readInts(TorchOp op, unsigned position,
                     std::vector<int64_t> &values) {
  std::optional<SmallVector<int64_t>> ints = op.getConstantIntsArg(position);
  if (!ints)
    return false;
  values.assign(ints->begin(), ints->end());
  return true;
}

/// The call `op` makes, when every shape and argument is known.
static std::optional<ConvolutionCall> getCall(TorchOp op, int threads) {
  std::optional<ConvolutionForm> form = getForm(op.getName());
  if (!form || op->getNumResults() != 1)
    return std::nullopt;
  ArrayAttr args = op.getArgs();
  RankedTensorType input = op.getStaticTensorArg(0),
                   weight = op.getStaticTensorArg(1);
  if (!input || !weight || args.size() < 7 ||
      input.getElementType() != weight.getElementType())
    return std::nullopt;
  std::optional<ElementKind> element = getElementKind(input.getElementType());
  if (!element)
    return std::nullopt;

  ConvolutionCall call;
  call.form = *form;
  call.element = *element;
  call.threads = threads;
  call.input.assign(input.getShape().begin(), input.getShape().end());
  if (auto channelsLast = op.getChannelsLast())
    call.channelsLastInput = llvm::is_contained(
        *channelsLast, cast<OperandRefAttr>(args[0]).getIndex());
  call.weight.assign(weight.getShape().begin(), weight.getShape().end());
  // A bias is a tensor operand; `None`, or an optional module attribute
  // holding None (`!memopt.script<"Tensor?">`, as the memory model reads
  // it), is none.
  if (Value bias = op.getOperandArg(2)) {
    if (isa<TensorType>(bias.getType())) {
      RankedTensorType bias = op.getStaticTensorArg(2);
      if (!bias || bias.getElementType() != input.getElementType())
        return std::nullopt;
      call.bias = true;
    }
  } else if (!isa<NoneAttr>(args[2])) {
    return std::nullopt;
  }

  // Argument positions after (input, weight, bias) by form.
  std::optional<SmallVector<int64_t>> groups;
  bool known = readInts(op, 3, call.stride);
  switch (call.form) {
  case ConvolutionForm::Convolution:
    if (auto mode = dyn_cast<StringAttr>(args[4]))
      call.paddingMode = mode.getValue().str();
    else
      known &= readInts(op, 4, call.padding);
    known &= readInts(op, 5, call.dilation);
    groups = op.getConstantIntsArg(6);
    break;
  case ConvolutionForm::TransposedConvolution:
    known &= readInts(op, 4, call.padding) &&
             readInts(op, 5, call.outputPadding) && args.size() >= 8 &&
             readInts(op, 7, call.dilation);
    groups = op.getConstantIntsArg(6);
    break;
  case ConvolutionForm::General: {
    auto transposed = args.size() >= 9 ? dyn_cast<BoolAttr>(args[6]) : nullptr;
    known &= transposed && readInts(op, 4, call.padding) &&
             readInts(op, 5, call.dilation) &&
             readInts(op, 7, call.outputPadding);
    call.transposed = transposed && transposed.getValue();
    groups = op.getConstantIntsArg(8);
    break;
  }
  }
  if (!known || !groups || groups->size() != 1 || (*groups)[0] < 1)
    return std::nullopt;
  call.groups = (*groups)[0];
  return call;
}

/// Values that will require grad in training: trainable parameters and
/// what is computed from them (an over-approximation: a comparison of such
/// a value counts too). Model inputs, buffers and attributes do not. A
/// list an op writes such a value into counts too (`spikes.append(s)`, then
/// `torch.stack(spikes)` or `spikes[t]`), and so do the block arguments and
/// results of an op whose regions carry one: repeated to a fixed point,
/// since a loop's body reads what later ops write. Without lists, the
/// spiking VGG's convolutions were measured without their input gradient
/// and priced by the formulas instead (17 % under on PyTorch 2.6's AVX
/// kernels).
static DenseSet<Value> getGradValues(ModuleOp module) {
  DenseSet<Value> grads;
  bool changed = true;
  // Only what can hold a gradient: a loop's counter or a tensor's size
  // would make the model's input look as if it needed one.
  auto mark = [&](Value value) {
    if (mayCarryGradient(value.getType()))
      changed |= grads.insert(value).second;
  };
  auto marked = [&](Value value) { return grads.contains(value); };
  while (changed) {
    changed = false;
    module.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto param = dyn_cast<ParamOp>(op)) {
        if (!param.getFrozen())
          mark(param.getResult());
        return;
      }
      // A function's arguments are the model's inputs: never.
      if (isa<func::FuncOp, ModuleOp>(op))
        return;
      bool fromRegions = llvm::any_of(op->getRegions(), [&](Region &region) {
        return llvm::any_of(region.getOps(), [&](Operation &inner) {
          return inner.hasTrait<OpTrait::IsTerminator>() &&
                 llvm::any_of(inner.getOperands(), marked);
        });
      });
      if (!fromRegions && llvm::none_of(op->getOperands(), marked))
        return;
      for (Value result : op->getResults())
        mark(result);
      for (Value operand : op->getOperands())
        if (isa<ListType>(operand.getType()))
          mark(operand);
      for (Region &region : op->getRegions())
        for (BlockArgument argument : region.getArguments())
          mark(argument);
    });
  }
  return grads;
}

/// The gradient mask the model will ask this convolution's backward for
/// (bit 0: input, bit 1: weight and bias); 0 when none or when the bias's
/// differs from the weight's (the probe measures them together).
static unsigned getGradientMask(TorchOp op, const DenseSet<Value> &grads) {
  Value input = op.getOperandArg(0), weight = op.getOperandArg(1),
        bias = op.getOperandArg(2);
  bool weightGrad = weight && grads.contains(weight);
  if (bias && isa<TensorType>(bias.getType()) &&
      grads.contains(bias) != weightGrad)
    return 0;
  return (input && grads.contains(input) ? 1u : 0u) | (weightGrad ? 2u : 0u);
}

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
    if (!getForm(op.getName())) {
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
    std::optional<ConvolutionCall> call = getCall(op, options.threads);
    if (!call) {
      ++summary.skipped;
      return WalkResult::advance();
    }
    unsigned mask = getGradientMask(op, grads);
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
