//===- CheckpointRegion.cpp - Parse, cache and run region graphs ----------===//
//
// Region graphs are run by the plain JIT interpreter (torch::jit::Code), not
// a graph executor: no profiling, fusion or autodiff passes touch them, so
// every operator runs the same ATen kernel eager PyTorch would, and results
// (dropout masks included) match eager bit for bit.
//
//===----------------------------------------------------------------------===//

#include "CheckpointRegion.h"
#include "memopt/Runtime/RegionIR.h"

#include <c10/util/Exception.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <mutex>
#include <unordered_map>

namespace memopt::runtime {
namespace {

bool isTensorType(const c10::TypePtr &type) {
  return type->kind() == c10::TypeKind::TensorType;
}

bool isScalarKind(c10::TypeKind kind) {
  return kind == c10::TypeKind::IntType || kind == c10::TypeKind::FloatType ||
         kind == c10::TypeKind::BoolType || kind == c10::TypeKind::NumberType;
}

std::string prefix(const std::string &regionName) {
  return "memopt::checkpoint(region '" + regionName + "'): ";
}

} // namespace

Region::Region(std::shared_ptr<torch::jit::Graph> graph,
               const std::string &regionName)
    : graph_(std::move(graph)) {
  std::string p = prefix(regionName);
  auto inputs = graph_->inputs();
  while (numTensorInputs_ < inputs.size() &&
         isTensorType(inputs[numTensorInputs_]->type()))
    ++numTensorInputs_;
  for (size_t i = numTensorInputs_; i < inputs.size(); ++i) {
    c10::TypeKind kind = inputs[i]->type()->kind();
    TORCH_CHECK(isScalarKind(kind), p, "graph input ", i, " (%",
                inputs[i]->debugName(), ") has type ", inputs[i]->type()->str(),
                "; region graphs take tensors first, then int/float/bool "
                "scalars");
    scalarKinds_.push_back(kind);
  }

  auto outputs = graph_->outputs();
  TORCH_CHECK(!outputs.empty(), p, "the graph returns nothing");
  if (outputs.size() == 1 &&
      outputs[0]->type()->kind() == c10::TypeKind::TupleType) {
    tupleOutput_ = true;
    for (const c10::TypePtr &t : outputs[0]->type()->containedTypes())
      TORCH_CHECK(isTensorType(t), p,
                  "the graph returns a tuple with a non-tensor element (",
                  t->str(), ")");
  } else {
    for (size_t i = 0; i < outputs.size(); ++i)
      TORCH_CHECK(isTensorType(outputs[i]->type()), p, "graph output ", i,
                  " has type ", outputs[i]->type()->str(),
                  "; region graphs return tensors");
  }

  checkRegionSideEffects(*graph_, regionName);
  effects_ = analyzeRegionEffects(*graph_, numTensorInputs_);
  code_ =
      std::make_unique<torch::jit::Code>(graph_, "memopt_region_" + regionName);
}

Region::~Region() = default;

std::shared_ptr<const Region> Region::get(const std::string &ir,
                                          const std::string &regionName) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const Region>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(ir);
    if (it != cache.end())
      return it->second;
  }
  // Parse outside the lock; a racing thread at worst parses twice.
  auto graph = std::make_shared<torch::jit::Graph>();
  try {
    torch::jit::parseIR(normalizeRegionIR(ir), graph.get());
  } catch (const std::exception &e) {
    TORCH_CHECK(false, prefix(regionName),
                "cannot parse the region graph (TorchScript IR): ",
                describeRegionIRParseError(e.what()));
  }
  auto region = std::make_shared<const Region>(std::move(graph), regionName);
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(ir, std::move(region)).first->second;
}

void Region::checkCall(at::TensorList tensors,
                       c10::ArrayRef<c10::Scalar> scalars,
                       const std::string &regionName) const {
  std::string p = prefix(regionName);
  TORCH_CHECK(tensors.size() == numTensorInputs_ &&
                  scalars.size() == scalarKinds_.size(),
              p, "the graph takes ", numTensorInputs_, " tensors and ",
              scalarKinds_.size(), " scalars but the call passes ",
              tensors.size(), " tensors and ", scalars.size(), " scalars");
  for (size_t i = 0; i < tensors.size(); ++i)
    TORCH_CHECK(tensors[i].defined(), p, "input tensor ", i, " is undefined");
  for (size_t i = 0; i < scalars.size(); ++i) {
    c10::TypeKind kind = scalarKinds_[i];
    bool ok =
        kind == c10::TypeKind::NumberType ||
        (kind == c10::TypeKind::FloatType &&
         (scalars[i].isFloatingPoint() || scalars[i].isIntegral(false))) ||
        (kind == c10::TypeKind::IntType &&
         (scalars[i].isIntegral(false) || scalars[i].isBoolean())) ||
        (kind == c10::TypeKind::BoolType &&
         (scalars[i].isBoolean() || scalars[i].isIntegral(false)));
    TORCH_CHECK(ok, p, "scalar ", i, " (", scalars[i],
                ") does not fit graph input type ",
                c10::typeKindToString(kind));
  }
}

std::vector<at::Tensor> Region::run(at::TensorList tensors,
                                    c10::ArrayRef<c10::Scalar> scalars) const {
  torch::jit::Stack stack;
  stack.reserve(tensors.size() + scalars.size());
  for (const at::Tensor &t : tensors)
    stack.emplace_back(t);
  for (size_t i = 0; i < scalars.size(); ++i) {
    switch (scalarKinds_[i]) {
    case c10::TypeKind::IntType:
      stack.emplace_back(scalars[i].toLong());
      break;
    case c10::TypeKind::FloatType:
      stack.emplace_back(scalars[i].toDouble());
      break;
    case c10::TypeKind::BoolType:
      stack.emplace_back(scalars[i].toBool());
      break;
    default:
      stack.emplace_back(scalars[i]);
    }
  }
  torch::jit::InterpreterState state(*code_);
  state.run(stack);

  std::vector<at::Tensor> outputs;
  if (tupleOutput_) {
    TORCH_INTERNAL_ASSERT(stack.size() == 1);
    for (const c10::IValue &v : stack[0].toTupleRef().elements())
      outputs.push_back(v.toTensor());
  } else {
    outputs.reserve(stack.size());
    for (c10::IValue &v : stack)
      outputs.push_back(std::move(v).toTensor());
  }
  return outputs;
}

} // namespace memopt::runtime
