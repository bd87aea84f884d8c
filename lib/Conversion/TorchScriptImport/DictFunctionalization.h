//===- DictFunctionalization.h - Dicts built in forward as plain values ---===//
#ifndef MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_DICTFUNCTIONALIZATION_H
#define MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_DICTFUNCTIONALIZATION_H

#include "ImportInternal.h"

#include <functional>
#include <unordered_map>

namespace mlir::memopt::detail {

/// The static keys of dict item reads and writes (and, for a dict literal,
/// its keys as one list), by node, as the specializer evaluated them: the
/// evaluator forgets a value's facts after its last use.
using DictKeyFacts = std::unordered_map<const torch::jit::Node *, ValueFacts>;

/// Records `node`'s key in `keys` when `node` reads or writes a dict item
/// (or builds a dict literal) with keys known at import: constants or
/// values derived from module attributes, not from tensor sizes.
void recordDictKeys(const torch::jit::Node *node,
                    const NodeEvaluator &evaluator, DictKeyFacts &keys);

/// What the rewrite needs from the specializer.
struct DictRewriteHooks {
  /// Whether the module attributes a key rests on can be checked at run
  /// time (a dict whose keys rest on others is left alone).
  std::function<bool(const ValueFacts &)> canAssume;
  /// Records them as assumptions (the exported forward checks them).
  std::function<void(const ValueFacts &, torch::jit::Node *)> assume;
  /// Destroys a node, forgetting what was known of its values.
  std::function<void(torch::jit::Node *)> destroy;
};

/// In the specialized, straight-line `graph`: reads of known keys of a dict
/// built in it become the stored values, and the writes go; a dict still
/// read afterwards is built in one prim::DictConstruct before its first
/// reader.
void functionalizeDicts(torch::jit::Graph &graph, const DictKeyFacts &keys,
                        const DictRewriteHooks &hooks);

} // namespace mlir::memopt::detail

#endif
