//===- KeptScript.h - running the script of kept control flow -*- C++ -*-===//
//
// Control flow on tensor data that the importer keeps whole travels as the
// text of a TorchScript graph (memopt.op's `script`). The import runs it to
// learn its results' shapes, the kernel probe to measure what it keeps;
// both parse it the same way and bound its loops. LibTorch only.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_KEPTSCRIPT_H
#define MEMOPT_CONVERSION_KEPTSCRIPT_H

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>

#include <memory>
#include <string>

namespace memopt::kept {

/// How many iterations a kept loop runs at most when memopt runs it (not
/// when the model does): a `while` that made-up or import-time data never
/// ends must not hang the compile; enough to see whether the shapes it
/// carries change.
constexpr int64_t kMaxIterationsWhenRun = 1000;

/// The graph of `script`, its top-level loops bounded by
/// kMaxIterationsWhenRun. Throws what torch::jit::parseIR throws.
inline std::shared_ptr<torch::jit::Graph>
parseBoundedScript(const std::string &script) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(script, graph.get());
  for (torch::jit::Node *node : graph->nodes()) {
    if (node->kind() != c10::prim::Loop)
      continue;
    auto trips = torch::jit::constant_as<int64_t>(node->input(0));
    if (trips && *trips > kMaxIterationsWhenRun) {
      torch::jit::WithInsertPoint insertPoint(node);
      node->replaceInput(0, graph->insertConstant(kMaxIterationsWhenRun));
    }
  }
  return graph;
}

} // namespace memopt::kept

#endif // MEMOPT_CONVERSION_KEPTSCRIPT_H
