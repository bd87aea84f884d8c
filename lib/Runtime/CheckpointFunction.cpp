//===- CheckpointFunction.cpp - The checkpoint's autograd function --------===//
//
// Forward runs the region as eager does, on leaves that alias the inputs
// and require grad where they do, then drops the graph it recorded and
// saves only the inputs. Backward restores them as the same leaves, reruns
// the region under the forward's RNG and autocast state, and differentiates
// the recomputed outputs with respect to them (parameters are ordinary
// inputs). The recomputed outputs are dropped before that backward runs: it
// needs their autograd edges, not their values, and what the region's own
// ops saved stays alive through the ops' saved variables.
//
//===----------------------------------------------------------------------===//

#include "BackwardChecks.h"
#include "CheckpointGradients.h"
#include "CheckpointRegion.h"
#include "CheckpointReplay.h"
#include "CheckpointSaved.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/graph_task.h>

namespace memopt::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// What backward needs besides the kept tensors; lives in the context as a
/// capsule and is released after the last backward.
struct CheckpointState : torch::CustomClassHolder {
  std::shared_ptr<const Region> region;
  std::string name;
  std::vector<c10::Scalar> scalars;
  SavedInputs saved;
  ForwardState forwardState;
  bool released = false;
};

/// The non-tensor arguments of one call (a single Function::apply argument).
struct CheckpointCall {
  std::shared_ptr<const Region> region;
  c10::ArrayRef<c10::Scalar> scalars;
  const std::vector<SavePolicy> *policies;
  const std::string *name;
};

constexpr const char *kCheckpointStateKey = "memopt_checkpoint_state";

/// The region's outputs as eager computes them. Kernels pick their
/// algorithm by grad mode (oneDNN's LSTM/GRU on PyTorch 2.x: a training
/// primitive with grad, an inference one without) and by which operands
/// require grad (2.x's matmul folds a 3-d input into one mm when the matrix
/// requires grad, and runs a bmm otherwise), and the bits differ with an
/// optimized BLAS. So the region runs with grad, on leaves that require
/// grad where the inputs do, exactly as the recompute's restored inputs.
/// The graph this records holds what the region's ops save until the
/// outputs are detached from it here: the region's eager footprint, for the
/// length of its forward (the memory model counts it).
variable_list runAsEager(const Region &region, at::TensorList inputs,
                         c10::ArrayRef<c10::Scalar> scalars) {
  AutocastCacheOff cacheOff;
  at::AutoGradMode gradOn(true);
  std::vector<at::Tensor> leaves;
  leaves.reserve(inputs.size());
  for (const at::Tensor &input : inputs) {
    if (!input.defined()) {
      leaves.push_back(input);
      continue;
    }
    at::Tensor leaf = input.detach();
    if (input.requires_grad())
      leaf.requires_grad_(true);
    leaves.push_back(std::move(leaf));
  }
  variable_list outputs = region.run(leaves, scalars);
  for (at::Tensor &output : outputs)
    if (output.defined())
      output = output.detach();
  return outputs;
}

struct CheckpointFunction
    : public torch::autograd::Function<CheckpointFunction> {
  static variable_list forward(AutogradContext *ctx, at::TensorList inputs,
                               const CheckpointCall &call) {
    // An output the loss does not reach gets no gradient (undefined, not
    // zeros), so the parameters only it depends on keep `.grad` None, as
    // in eager (an optimizer skips those; zeros would move momentum and
    // weight decay).
    ctx->set_materialize_grads(false);
    auto state = c10::make_intrusive<CheckpointState>();
    state->region = call.region;
    state->name = *call.name;
    state->scalars = call.scalars.vec();
    const RegionEffects &effects = call.region->effects();

    state->saved.snapshotWritten(inputs, effects.writtenInputs, state->name);
    state->forwardState =
        ForwardState::capture(inputs, effects.nondeterministic);
    state->saved.save(inputs, *call.policies, state->name);

    variable_list outputs = runAsEager(*call.region, inputs, call.scalars);
    ctx->save_for_backward(state->saved.takeKeptTensors());
    ctx->saved_data[kCheckpointStateKey] = c10::IValue::make_capsule(state);
    return outputs;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    refuseDoubleBackward("checkpoint");
    auto state = c10::static_intrusive_pointer_cast<CheckpointState>(
        ctx->saved_data.at(kCheckpointStateKey).toCapsule());
    TORCH_CHECK(!state->released, "memopt::checkpoint(region '", state->name,
                "'): trying to backward through the region a second time "
                "after its saved inputs were freed; pass retain_graph=True "
                "to the first backward");
    bool keepGraph = torch::autograd::get_current_graph_task_keep_graph();

    state->saved.prefetch();
    std::vector<at::Tensor> kept = ctx->get_saved_variables();
    std::vector<at::Tensor> inputs = state->saved.restore(kept);

    variable_list outputs;
    {
      ReplayGuard replay(state->forwardState);
      at::AutoGradMode gradOn(true);
      outputs = state->region->run(inputs, state->scalars);
    }

    torch::autograd::edge_list roots;
    variable_list diffGrads;
    for (size_t j = 0; j < outputs.size() && j < grads.size(); ++j) {
      if (!outputs[j].requires_grad() || !grads[j].defined())
        continue;
      roots.push_back(torch::autograd::impl::gradient_edge(outputs[j]));
      diffGrads.push_back(grads[j]);
    }
    outputs.clear();
    // The restored inputs are leaves: their gradients arrive at their grad
    // accumulators, which exist when the recompute used them. Parameters
    // whose only consumer is this call get theirs added to `.grad` there.
    std::vector<size_t> wrtIndex;
    std::vector<at::Tensor> leaves;
    std::vector<std::shared_ptr<torch::autograd::Node>> direct;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].requires_grad() || !ctx->needs_input_grad(i))
        continue;
      wrtIndex.push_back(i);
      leaves.push_back(inputs[i]);
      direct.push_back(directAccumulator(state->saved.original(i, kept)));
    }

    // One gradient per forward argument: the tensors, then the call.
    variable_list result(inputs.size() + 1);
    variable_list g = regionInputGradients(roots, diffGrads, leaves, direct);
    for (size_t k = 0; k < wrtIndex.size(); ++k)
      result[wrtIndex[k]] = std::move(g[k]);
    if (!keepGraph) {
      state->saved.release();
      state->released = true;
    }
    return result;
  }
};

} // namespace

std::vector<at::Tensor> runCheckpoint(std::shared_ptr<const Region> region,
                                      at::TensorList inputs,
                                      c10::ArrayRef<c10::Scalar> scalars,
                                      const std::vector<SavePolicy> &policies,
                                      const std::string &name) {
  bool anyRequiresGrad = false;
  for (const at::Tensor &t : inputs)
    anyRequiresGrad |= t.requires_grad();
  if (!at::GradMode::is_enabled() || !anyRequiresGrad) {
    // Nothing to differentiate: nothing to save or recompute.
    AutocastCacheOff cacheOff;
    return region->run(inputs, scalars);
  }
  CheckpointCall call{std::move(region), scalars, &policies, &name};
  return CheckpointFunction::apply(inputs, call);
}

} // namespace memopt::runtime
