//===- CheckpointGradients.cpp - Where a region's input gradients go ------===//
//
// The recompute's backward runs in accumulate mode up to the restored
// leaves' grad accumulators, each carrying a pre-hook that takes the
// gradient (the sum over the leaf's uses, as an accumulator receives it)
// and hands the accumulator nothing, so no restored leaf gets a `.grad`.
// For a leaf delivered directly, a post-hook then passes the taken gradient,
// now held only here, to the original tensor's own accumulator: the same
// call, with the same reference count, that eager makes.
//
//===----------------------------------------------------------------------===//

#include "CheckpointGradients.h"

#include "memopt/Runtime/TorchCompat.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/graph_task.h>

#include <memory>

namespace memopt::runtime {
namespace {

using GradNode = torch::autograd::Node;
using torch::autograd::variable_list;

using GradientSlots = std::vector<at::Tensor>;

struct TakeGradient : torch::autograd::FunctionPreHook {
  TakeGradient(std::shared_ptr<GradientSlots> slots, size_t index)
      : slots(std::move(slots)), index(index) {}
  variable_list operator()(const variable_list &grads) override {
    (*slots)[index] = grads.at(0);
    return {at::Tensor()};
  }
  std::shared_ptr<GradientSlots> slots;
  size_t index;
};

struct DeliverGradient : torch::autograd::FunctionPostHook {
  DeliverGradient(std::shared_ptr<GradientSlots> slots, size_t index,
                  std::shared_ptr<GradNode> target)
      : slots(std::move(slots)), index(index), target(std::move(target)) {}
  variable_list operator()(const variable_list &outputs,
                           const variable_list & /*inputs*/) override {
    at::Tensor grad = std::move((*slots)[index]);
    if (grad.defined())
      (*target)(variable_list{std::move(grad)});
    return outputs;
  }
  std::shared_ptr<GradientSlots> slots;
  size_t index;
  std::shared_ptr<GradNode> target;
};

} // namespace

std::shared_ptr<GradNode> directAccumulator(const at::Tensor &original) {
  return accumulatorWithConsumers(original, 1);
}

std::shared_ptr<GradNode> accumulatorWithConsumers(const at::Tensor &original,
                                                   long consumers) {
  if (!original.defined() || !original.is_leaf() || !original.requires_grad())
    return nullptr;
  // Only a backward that accumulates into every leaf it reaches: with
  // `inputs=` or autograd.grad the original's `.grad` must stay untouched.
  const auto *execInfo = torch::autograd::get_current_graph_task_exec_info();
  if (!execInfo || !execInfo->empty())
    return nullptr;
  std::shared_ptr<GradNode> accumulator =
      torch::autograd::impl::try_get_grad_accumulator(original);
  if (!accumulator || compat::leafHasGradientHooks(original, *accumulator))
    return nullptr;
  // This reference and the consumers' edges: any other holder is another
  // consumer whose gradient eager would sum with this one before adding it
  // to `.grad`, an order the direct path could not keep.
  return accumulator.use_count() == consumers + 1 ? accumulator : nullptr;
}

variable_list
regionInputGradients(const torch::autograd::edge_list &roots,
                     const variable_list &rootGrads,
                     const std::vector<at::Tensor> &leaves,
                     const std::vector<std::shared_ptr<GradNode>> &targets) {
  auto slots = std::make_shared<GradientSlots>(leaves.size());
  torch::autograd::edge_list wrt;
  for (size_t k = 0; k < leaves.size(); ++k) {
    std::shared_ptr<GradNode> accumulator =
        torch::autograd::impl::try_get_grad_accumulator(leaves[k]);
    if (!accumulator)
      continue; // unused by the recompute: no gradient
    accumulator->add_pre_hook(std::make_unique<TakeGradient>(slots, k));
    if (k < targets.size() && targets[k])
      accumulator->add_post_hook(
          std::make_unique<DeliverGradient>(slots, k, targets[k]));
    wrt.emplace_back(std::move(accumulator), 0);
  }
  if (!roots.empty() && !wrt.empty())
    torch::autograd::Engine::get_default_engine().execute(
        roots, rootGrads, /*keep_graph=*/false, /*create_graph=*/false,
        /*accumulate_grad=*/true, wrt);
  return std::move(*slots);
}

} // namespace memopt::runtime
