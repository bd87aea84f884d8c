//===- ForwardCheck.cpp - Run a compiled module once before shipping it ---===//
//
// The source's forward runs without autograd (it only gives the expected
// outputs, and a model too large to train here may still run inference);
// the compiled one runs with it, as training calls it, so that its regions
// take the path that saves for backward. Should the outputs differ, the
// source runs again with autograd before anything is reported: no kernel
// should depend on the mode, but a false alarm would fail a good compile.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/ForwardCheck.h"

#include "ExportInternal.h"

#include "memopt/Conversion/ExampleInputs.h"
#include "memopt/Conversion/ThreadCountScope.h"
#include "memopt/Conversion/TorchCompat.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <cstring>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_set>

using namespace mlir::memopt;

namespace {
/// One seed for the inputs and every forward: dropout draws the same masks
/// in the source and the compiled module.
constexpr uint64_t kSeed = 20261128;

/// The state a forward may write (every tensor but the parameters, which
/// are the bulk of a model and which no forward should write), put back
/// after each run.
class StateSnapshot {
public:
  explicit StateSnapshot(const torch::jit::Module &module) {
    collect(module._ivalue());
    c10::AutoGradMode noGrad(false);
    for (const at::Tensor &tensor : written)
      saved.push_back(tensor.clone());
    for (const at::Tensor &tensor : parameters)
      parameterVersions.push_back(tensor._version());
  }

  /// Copies every one back: batch norm writes its running statistics
  /// without counting a new version.
  void restore() const {
    c10::AutoGradMode noGrad(false);
    for (size_t i = 0; i < written.size(); ++i)
      written[i].copy_(saved[i]);
  }

  bool parametersWritten() const {
    for (size_t i = 0; i < parameters.size(); ++i)
      if (parameters[i]._version() != parameterVersions[i])
        return true;
    return false;
  }

private:
  void collect(const c10::intrusive_ptr<c10::ivalue::Object> &object) {
    const c10::ClassTypePtr &type = object->type();
    for (size_t slot = 0; slot < object->slots().size(); ++slot) {
      const c10::IValue &value = object->getSlot(slot);
      if (value.isTensor()) {
        add(value.toTensor(),
            slot < type->numAttributes() && type->is_parameter(slot));
      } else if (value.isTensorList()) {
        for (const at::Tensor &tensor : value.toTensorVector())
          add(tensor, /*parameter=*/false);
      } else if (value.isObject() && value.toObject()->type()->is_module()) {
        collect(value.toObject());
      }
    }
  }

  void add(const at::Tensor &tensor, bool parameter) {
    if (!tensor.defined() || !seen.insert(tensor.unsafeGetTensorImpl()).second)
      return;
    (parameter ? parameters : written).push_back(tensor);
  }

  std::unordered_set<const c10::TensorImpl *> seen;
  std::vector<at::Tensor> written, saved, parameters;
  std::vector<int64_t> parameterVersions;
};

std::vector<c10::IValue> makeInputs(const ForwardCheckCall &call) {
  at::manual_seed(kSeed);
  std::vector<c10::IValue> inputs;
  for (const ForwardCheckInput &input : call.inputs)
    inputs.emplace_back(makeExampleInput(input.sizes, input.dtype));
  return inputs;
}

/// Fresh copies: a forward may write its inputs in place.
std::vector<c10::IValue> copyOf(const std::vector<c10::IValue> &inputs) {
  std::vector<c10::IValue> copies;
  for (const c10::IValue &input : inputs)
    copies.emplace_back(input.toTensor().clone());
  return copies;
}

/// Detaches every tensor of `value`, so that the autograd graph behind it
/// is freed while the values are kept.
c10::IValue detached(const c10::IValue &value) {
  if (value.isTensor()) {
    const at::Tensor &tensor = value.toTensor();
    return tensor.defined() ? c10::IValue(tensor.detach()) : value;
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const c10::IValue &element : value.toTupleRef().elements())
      elements.push_back(detached(element));
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  if (value.isList()) {
    c10::impl::GenericList list(value.toList().elementType());
    for (const c10::IValue &element : value.toList())
      list.push_back(detached(element));
    return list;
  }
  if (value.isGenericDict()) {
    c10::impl::GenericDict dict(value.toGenericDict().keyType(),
                                value.toGenericDict().valueType());
    for (const auto &entry : value.toGenericDict())
      dict.insert(entry.key(), detached(entry.value()));
    return dict;
  }
  return value;
}

bool sameBits(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

std::string keyText(const c10::IValue &key) {
  if (key.isString())
    return "'" + key.toStringRef() + "'";
  std::ostringstream os;
  os << key;
  return os.str();
}

/// Where two tensors differ, or std::nullopt when they hold the same bytes
/// (NaNs included: the compiled model must compute the same NaN).
std::optional<std::string> tensorDifference(const at::Tensor &expected,
                                            const at::Tensor &actual) {
  if (expected.defined() != actual.defined())
    return std::string(expected.defined() ? "undefined" : "defined") +
           " where the source's is not";
  if (!expected.defined())
    return std::nullopt;
  std::ostringstream os;
  if (expected.scalar_type() != actual.scalar_type() ||
      expected.sizes() != actual.sizes()) {
    os << actual.scalar_type() << actual.sizes() << " where the source has "
       << expected.scalar_type() << expected.sizes();
    return os.str();
  }
  at::Tensor a = expected.to(at::kCPU).contiguous();
  at::Tensor b = actual.to(at::kCPU).contiguous();
  size_t bytes = a.numel() * a.element_size();
  if (bytes == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), bytes) == 0)
    return std::nullopt;
  at::Tensor differs = a.ne(b);
  if (at::isFloatingType(a.scalar_type()) || a.is_complex())
    differs =
        differs.logical_and(a.isnan().logical_and(b.isnan()).logical_not());
  os << differs.sum().item<int64_t>() << " of " << a.numel()
     << " elements differ";
  if (at::isFloatingType(a.scalar_type()))
    os << " (largest difference "
       << (a.to(at::kDouble) - b.to(at::kDouble))
              .abs()
              .nan_to_num(0)
              .max()
              .item<double>()
       << ")";
  return os.str();
}

/// The first place where `actual` differs from `expected`, as
/// "output[1]['out']: ...", or std::nullopt.
std::optional<std::string> difference(const c10::IValue &expected,
                                      const c10::IValue &actual,
                                      const std::string &where) {
  auto differ = [&](const std::string &what) {
    return std::optional<std::string>(where + ": " + what);
  };
  if (expected.isTensor() || actual.isTensor()) {
    if (!expected.isTensor() || !actual.isTensor())
      return differ(std::string(actual.tagKind()) + " where the source has " +
                    expected.tagKind());
    if (auto what = tensorDifference(expected.toTensor(), actual.toTensor()))
      return differ(*what);
    return std::nullopt;
  }
  if (expected.isTuple() || expected.isList()) {
    std::vector<c10::IValue> left = expected.isTuple()
                                        ? expected.toTupleRef().elements().vec()
                                        : expected.toList().vec();
    if (!actual.isTuple() && !actual.isList())
      return differ(std::string(actual.tagKind()) + " where the source has " +
                    expected.tagKind());
    std::vector<c10::IValue> right = actual.isTuple()
                                         ? actual.toTupleRef().elements().vec()
                                         : actual.toList().vec();
    if (left.size() != right.size())
      return differ(std::to_string(right.size()) +
                    " elements where the source has " +
                    std::to_string(left.size()));
    for (size_t i = 0; i < left.size(); ++i)
      if (auto what = difference(left[i], right[i],
                                 where + "[" + std::to_string(i) + "]"))
        return what;
    return std::nullopt;
  }
  if (expected.isGenericDict()) {
    if (!actual.isGenericDict())
      return differ(std::string(actual.tagKind()) +
                    " where the source has a dict");
    c10::impl::GenericDict left = expected.toGenericDict();
    c10::impl::GenericDict right = actual.toGenericDict();
    if (left.size() != right.size())
      return differ(std::to_string(right.size()) +
                    " entries where the source has " +
                    std::to_string(left.size()));
    for (const auto &entry : left) {
      auto found = right.find(entry.key());
      std::string at = where + "[" + keyText(entry.key()) + "]";
      if (found == right.end())
        return std::optional<std::string>(at + ": missing");
      if (auto what = difference(entry.value(), found->value(), at))
        return what;
    }
    return std::nullopt;
  }
  if (expected.isNone() || expected.isInt() || expected.isDouble() ||
      expected.isBool() || expected.isString()) {
    bool same = expected.tagKind() == actual.tagKind() &&
                (expected.isNone() ||
                 (expected.isInt() && expected.toInt() == actual.toInt()) ||
                 (expected.isBool() && expected.toBool() == actual.toBool()) ||
                 (expected.isString() &&
                  expected.toStringRef() == actual.toStringRef()) ||
                 (expected.isDouble() &&
                  sameBits(expected.toDouble(), actual.toDouble())));
    if (!same) {
      std::ostringstream os;
      os << actual << " where the source has " << expected;
      return differ(os.str());
    }
  }
  return std::nullopt; // other values (objects) are not compared
}

/// The source's outputs for `inputs`, or why there are none.
struct Expected {
  std::optional<c10::IValue> outputs;
  std::string failure;
};

Expected runSource(const torch::jit::Module &source,
                   const std::vector<c10::IValue> &inputs, bool withGrad,
                   const StateSnapshot &state) {
  Expected expected;
  try {
    c10::AutoGradMode mode(withGrad);
    at::manual_seed(kSeed);
    c10::IValue outputs = source.get_method("forward")(copyOf(inputs));
    expected.outputs = detached(outputs);
  } catch (const std::exception &error) {
    expected.failure = exporter::describeError(error);
  }
  state.restore();
  return expected;
}
} // namespace

ForwardCheckOutcome
mlir::memopt::checkCompiledForward(const torch::jit::Module &compiled,
                                   const torch::jit::Module &source,
                                   const std::vector<ForwardCheckCall> &calls) {
  ForwardCheckOutcome outcome;
  // The forwards' warnings are the model's, not the compile's.
  compat::CollectingWarningHandler warnings;
  compat::WarningHandlerGuard warningGuard(&warnings);
  // One call each: the executor's profiling and fusion passes would cost
  // more than the call (and the kernels they pick are the eager ones).
  torch::jit::GraphOptimizerEnabledGuard unoptimized(false);
  // Both runs use the same kernels whatever their count; training's own
  // count (often one thread) can make a large model's forward take seconds.
  ThreadCountScope threads(
      std::max<int>(at::get_num_threads(),
                    std::min(std::thread::hardware_concurrency(), 16u)));
  try {
    StateSnapshot state(source);
    for (const ForwardCheckCall &call : calls) {
      std::vector<c10::IValue> inputs = makeInputs(call);
      Expected expected = runSource(source, inputs, /*withGrad=*/false, state);
      bool sourceWrote = state.parametersWritten();

      std::optional<c10::IValue> actual;
      try {
        at::manual_seed(kSeed);
        c10::IValue outputs = compiled.get_method(call.method)(copyOf(inputs));
        actual = detached(outputs);
      } catch (const std::exception &error) {
        state.restore();
        if (!expected.outputs) {
          // The model itself cannot run on inputs made from shapes alone
          // (an index computed from data, an input that must be positive).
          // Both messages: the compiled one may fail for another reason.
          outcome.notCompared.push_back(
              call.label +
              ": the source model's forward fails on these "
              "inputs too (source: " +
              expected.failure +
              "; compiled: " + exporter::describeError(error) + ")");
          continue;
        }
        outcome.error = "the compiled model fails on its first call (" +
                        call.label + "): " + exporter::describeError(error);
        return outcome;
      }
      state.restore();
      if (!expected.outputs) {
        outcome.notCompared.push_back(
            call.label +
            ": the source model's forward fails on these inputs (" +
            expected.failure + ")");
        continue;
      }
      if (sourceWrote || state.parametersWritten()) {
        outcome.notCompared.push_back(call.label +
                                      ": the forward writes parameters");
        continue;
      }
      std::optional<std::string> differs =
          difference(*expected.outputs, *actual, "output");
      if (differs) {
        Expected withGrad = runSource(source, inputs, /*withGrad=*/true, state);
        if (withGrad.outputs)
          differs = difference(*withGrad.outputs, *actual, "output");
      }
      if (differs) {
        outcome.error = "the compiled model's forward differs from the source "
                        "model's on the same inputs (" +
                        call.label + "): " + *differs;
        return outcome;
      }
      ++outcome.compared;
    }
  } catch (const std::exception &error) {
    outcome.error = "cannot check the compiled model's forward: " +
                    exporter::describeError(error);
  }
  return outcome;
}
