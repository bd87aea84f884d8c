//===- CheckpointGradients.h - Where a region's input gradients go -*- C++
//-*-===//
//
// Private to the runtime. A region's backward differentiates the recomputed
// outputs with respect to its restored inputs. Returning every gradient at
// once from the autograd Function would hold all of them until the region's
// backward ends: for a region over hundreds of layers, all those layers'
// parameter gradients, where eager adds each into `.grad` as soon as it is
// computed. So a parameter whose only consumer in the whole autograd graph
// is this region call gets its gradient accumulated into `.grad` the moment
// the recompute produces it, exactly as eager's AccumulateGrad would, and
// the Function returns nothing for it. Every other input's gradient is
// returned as before.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_CHECKPOINTGRADIENTS_H
#define MEMOPT_LIB_RUNTIME_CHECKPOINTGRADIENTS_H

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <memory>
#include <vector>

namespace memopt::runtime {

/// The grad accumulator of `original` when its gradient can go straight into
/// its `.grad` from inside the backward of the region call that holds it
/// (see above): the outer backward accumulates into leaves (no `inputs=`,
/// not autograd.grad), the tensor is a leaf whose accumulator has no hooks,
/// and no autograd node but the region call's own points at that accumulator
/// (another use, a second forward still alive, or a holder such as DDP's
/// reducer all keep the ordinary path, so the sum into `.grad` stays
/// eager's). Null otherwise.
std::shared_ptr<torch::autograd::Node>
directAccumulator(const at::Tensor &original);

/// As directAccumulator, but for an accumulator that exactly `consumers`
/// autograd nodes point at (the caller's own included).
std::shared_ptr<torch::autograd::Node>
accumulatorWithConsumers(const at::Tensor &original, long consumers);

/// Runs the region's backward from `roots` (seeded with `rootGrads`) to the
/// restored leaves `leaves`, returning one gradient per leaf (undefined where
/// none reached it). Where `targets[k]` is set (a directAccumulator), that
/// leaf's gradient goes to it as soon as it is computed and its entry is
/// left undefined.
torch::autograd::variable_list regionInputGradients(
    const torch::autograd::edge_list &roots,
    const torch::autograd::variable_list &rootGrads,
    const std::vector<at::Tensor> &leaves,
    const std::vector<std::shared_ptr<torch::autograd::Node>> &targets);

} // namespace memopt::runtime

#endif // MEMOPT_LIB_RUNTIME_CHECKPOINTGRADIENTS_H
