//===- ChainPlanner.h - optimal checkpointing of a chain --------*- C++ -*-===//
//
// A chain is a sequence of segments (operators, or groups of operators
// between cut points of a DAG) where segment i consumes the boundary tensor
// t_i and produces t_{i+1}. A plan partitions the chain into groups; each
// group is either stored (autograd keeps what it saves, as without memopt)
// or checkpointed (only its input is saved, kept, compressed or offloaded,
// and the group is recomputed in backward).
//
// planChain finds the plan of least recompute + compression + transfer cost
// whose modelled peak fits the budget, exactly (no discretisation): a
// dynamic program over chain positions that keeps, for each prefix, the
// Pareto frontier of (retained bytes, cost). evaluateChainPlan is the model
// both the search and its brute-force test use.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_CHAINPLANNER_H
#define MEMOPT_PLANNING_CHAINPLANNER_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::memopt {

/// A tensor crossing into a segment, for regions that start there: only
/// those the region itself uses become its inputs and are kept.
struct CrossingTensor {
  unsigned firstUse = 0; // first segment (>= this one) that uses it
  int64_t bytes = 0;
  int64_t packedBytes = 0; // bytes when saved packed (== bytes if not binary)
};

/// Uses of one parameter (`param`: an index the chain gives it) by a
/// segment's ops, and by the whole function.
struct ParamUses {
  unsigned param = 0;
  unsigned uses = 0;
  unsigned total = 0;
};

/// Uses, by a segment's ops, of one activation that needs a gradient and
/// that three or more ops use (`value`: an index the chain gives it).
struct ActivationUses {
  unsigned value = 0;
  unsigned uses = 0;         // by this segment's ops
  unsigned usesFromHere = 0; // by this segment's and later ones' (and return)
  int definedIn = -1;        // the segment defining it; -1: a function input
};

struct ChainSegment {
  std::string label;       // module path or op range, for reports
  int64_t inputBytes = 0;  // t_i, the tensor entering the segment
  int64_t outputBytes = 0; // t_{i+1}
  int64_t savedBytes = 0;  // kept by autograd for backward, besides t_i/t_{i+1}
  // The part of t_i (t_{i+1}) autograd keeps when the segment is stored: a
  // boundary of several tensors (a residual) is rarely saved whole.
  int64_t savedInputBytes = 0;
  int64_t savedOutputBytes = 0;
  // Bytes of t_i saved both by this segment and, as its output, by the
  // previous one: counted once when both are stored or recomputed together.
  int64_t sharedBoundaryBytes = 0;
  int64_t backwardTransientBytes = 0; // workspace of the segment's backward
  // Module state the segment writes in place (running statistics): a region
  // keeps a copy of it from forward to backward and recomputes on another.
  int64_t writtenStateBytes = 0;
  double forwardCost = 0; // seconds to (re)compute the segment forward
  // Bytes t_i packs to when provably binary/small-integer; nullopt if not.
  std::optional<int64_t> packedInputBytes;
  bool canStartRegion = true;    // t_i is a cut point a region may start at
  bool forceCheckpoint = false;  // --checkpoint names this segment
  bool forbidCheckpoint = false; // --no-checkpoint names this segment
  // The tensors making up t_i, one by one; empty: t_i is one tensor that
  // the segment itself uses (inputBytes, packedInputBytes).
  std::vector<CrossingTensor> crossing;
  // Trainable parameters the segment's ops use more than once in the
  // function: autograd sums their gradients in the order backward makes
  // them, and a region returns the sum of its own uses' at once, so a
  // region that holds two or more uses of one but not all of them would
  // add in another order (other bits). Such a group is never a region.
  std::vector<ParamUses> paramUses;
  // The same for activations defined before the segment: autograd adds the
  // gradients of an activation's uses as backward makes them, the later
  // uses' first. A region holding two or more uses of one while a use after
  // the region remains returns its own uses' sum at once, added to the
  // later uses' in another order (other bits: an ASPP head's parallel
  // branches in deeplabv3_resnet101). Such a group is never a region.
  std::vector<ActivationUses> activationUses;
};

enum class InputPolicy { Keep, Compress, Offload };

struct ChainGroup {
  unsigned begin = 0, end = 0; // segments [begin, end)
  bool checkpointed = false;
  InputPolicy policy = InputPolicy::Keep; // only for checkpointed groups
};

struct ChainPlannerOptions {
  int64_t budgetBytes = INT64_MAX;
  bool allowCompress = true;
  bool allowOffload = false;         // only on CUDA plans
  double compressSecondsPerByte = 0; // pack + unpack of the full-size input
  double offloadSecondsPerByte = 0;  // exposed part of device<->host copies
  unsigned maxGroupLength = 0;       // 0: unbounded
  // Partial plans whose retained bytes differ by less than this are
  // compared on cost alone: bounds the search on long chains at the price
  // of optimality within this many bytes. 0 or 1: exact.
  int64_t retainedResolutionBytes = 0;
};

struct ChainPlan {
  std::vector<ChainGroup> groups;
  int64_t peakBytes = 0;
  double cost = 0;
  bool feasible = false; // false: no plan fits; groups is the least-peak plan
};

struct ChainPlanEvaluation {
  int64_t peakBytes = 0;
  double cost = 0;
  bool valid = false; // respects canStartRegion / force / forbid flags
};

/// Peak and cost of `groups` (which must tile the chain) under the model.
ChainPlanEvaluation evaluateChainPlan(const std::vector<ChainSegment> &chain,
                                      const std::vector<ChainGroup> &groups,
                                      const ChainPlannerOptions &options);

/// The least-cost plan within the budget; if none fits, the plan of least
/// peak (feasible = false), so callers can report the smallest reachable peak.
ChainPlan planChain(const std::vector<ChainSegment> &chain,
                    const ChainPlannerOptions &options);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_CHAINPLANNER_H
