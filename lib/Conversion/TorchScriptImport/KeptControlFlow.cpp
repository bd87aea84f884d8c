//===- KeptControlFlow.cpp - Control flow on tensor data, kept whole ------===//
//
// A prim::If whose condition, or a prim::Loop whose trip count or first
// condition, depends on tensor data (`if x.abs().max() > 1:`, `while err >
// tol:`) cannot be folded at import. Instead of refusing the model, the
// node stays in the graph as one opaque unit: memopt.op "prim::If" carrying
// the text of a TorchScript graph that runs it, which the exporter inlines,
// so the decision is made when the model runs and autograd records what
// ran. The planner sees one op that reads its operands and makes its
// results; the specializer learns the results' shapes by running the graph
// (each branch of an If), and they must not depend on the data.
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include "memopt/Conversion/KeptScript.h"
#include "memopt/Runtime/RegionIR.h"

#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/runtime/interpreter.h>

using namespace mlir::memopt::detail;
using torch::jit::Block;
using torch::jit::Node;
namespace tj = torch::jit;

/// True when `inner` sits in one of `outer`'s blocks, at any depth (a
/// block's inputs belong to its param node, which sits in the block).
static bool isInside(const Node *inner, const Node *outer) {
  for (const Block *block = inner->owningBlock(); block;
       block = block->owningNode() ? block->owningNode()->owningBlock()
                                   : nullptr)
    if (block->owningNode() == outer)
      return true;
  return false;
}

/// Calls `visit` on every node in `node`'s blocks, in order, at any depth.
static void forEachInside(Node *node, llvm::function_ref<void(Node *)> visit) {
  for (Block *block : node->blocks())
    for (Node *inner : block->nodes()) {
      visit(inner);
      forEachInside(inner, visit);
    }
}

Node *mlir::memopt::detail::hoistStateReads(Node *node) {
  Node *first = nullptr;
  bool moved = true;
  while (moved) {
    moved = false;
    std::vector<Node *> reads;
    forEachInside(node, [&](Node *inner) {
      if (inner->kind() == c10::prim::GetAttr &&
          !isInside(inner->input(0)->node(), node))
        reads.push_back(inner);
    });
    for (Node *read : reads) {
      read->moveBefore(node);
      if (!first || read->isBefore(first))
        first = read;
      moved = true;
    }
  }
  return first;
}

/// Appends the values `node` and everything inside it read from outside it
/// (constants aside: the graph makes its own), each once, in reading order.
static void collectInputs(Node *node, Node *kept,
                          const KeptConstantFn &constantOf,
                          std::vector<tj::Value *> &inputs,
                          std::set<tj::Value *> &seen) {
  auto add = [&](tj::Value *value) {
    if (value->node()->kind() == c10::prim::Constant ||
        isInside(value->node(), kept) || !seen.insert(value).second ||
        (constantOf && constantOf(value)))
      return;
    inputs.push_back(value);
  };
  for (tj::Value *input : node->inputs())
    add(input);
  for (Block *block : node->blocks()) {
    for (Node *inner : block->nodes())
      collectInputs(inner, kept, constantOf, inputs, seen);
    for (tj::Value *output : block->outputs())
      add(output);
  }
}

/// Rewrites the constants parseIR cannot read back: a non-finite float
/// (printed as `value=-inf`) becomes `float("-inf")`, a tuple is built
/// from its elements.
static void makeParseable(Block *block, torch::jit::Graph &graph) {
  std::vector<Node *> nodes(block->nodes().begin(), block->nodes().end());
  for (Node *node : nodes) {
    for (Block *inner : node->blocks())
      makeParseable(inner, graph);
    if (node->kind() != c10::prim::Constant)
      continue;
    std::optional<c10::IValue> value = torch::jit::toIValue(node->output());
    if (!value)
      continue;
    torch::jit::WithInsertPoint insertPoint(node);
    tj::Value *replacement = nullptr;
    if (value->isDouble() && !std::isfinite(value->toDouble())) {
      double number = value->toDouble();
      std::string text = std::isnan(number) ? "nan"
                         : number > 0       ? "inf"
                                            : "-inf";
      replacement = graph.insert(c10::Symbol::fromQualString("aten::Float"),
                                 {graph.insertConstant(text)});
    } else if (value->isTuple()) {
      std::vector<tj::Value *> elements;
      for (const c10::IValue &element : value->toTupleRef().elements())
        elements.push_back(graph.insertConstant(element));
      replacement = graph.insertNode(graph.createTuple(elements))->output();
    }
    if (!replacement)
      continue;
    replacement->setType(node->output()->type());
    node->output()->replaceAllUsesWith(replacement);
    node->destroy();
  }
}

/// Nodes inside a kept unit that would change what the importer knows or
/// what a rerun does; each is refused by name.
static void checkKeepable(Node *node) {
  forEachInside(node, [&](Node *inner) {
    // Where the error points: the node inside, or the construct around it.
    const Node *located = describeNode(inner).empty() ? node : inner;
    if (inner->kind() == c10::prim::SetAttr)
      throw ImportError(
          "forward assigns module attribute '" + inner->s(c10::attr::name) +
              "' inside " + node->kind().toQualString() +
              " on tensor data; memopt keeps such control flow whole only "
              "when it assigns no module state",
          located);
    if (inner->kind() == c10::prim::Enter)
      throw ImportError("'with' blocks are not supported inside control "
                        "flow on tensor data",
                        located);
    for (tj::Value *input : inner->inputs())
      if (input->type()->cast<c10::ClassType>() &&
          !isInside(input->node(), node))
        throw ImportError("a module object is used as a value by '" +
                              std::string(inner->kind().toQualString()) +
                              "' inside control flow on tensor data",
                          located);
  });
}

/// True for a node that writes an input in place, by its schema.
static bool writesInput(const Node *node, size_t index) {
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (!schema || index >= schema->arguments().size())
    return false;
  const c10::AliasInfo *alias = schema->arguments()[index].alias_info();
  return alias && alias->isWrite();
}

/// False only for a value made inside by an op whose schema says its
/// results are new tensors; block inputs (loop-carried values), views and
/// schema-less constructs may alias an input of the kept node.
static bool mayAliasInput(const tj::Value *value) {
  const Node *producer = value->node();
  if (producer->kind() == c10::prim::Param)
    return true;
  const c10::FunctionSchema *schema = producer->maybeSchema();
  return !schema ||
         llvm::any_of(schema->returns(), [](const c10::Argument &result) {
           return result.alias_info() != nullptr;
         });
}

KeptControlFlow mlir::memopt::detail::describeKeptControlFlow(
    Node *node, const KeptConstantFn &constantOf) {
  checkKeepable(node);
  KeptControlFlow kept;
  std::set<tj::Value *> seen;
  collectInputs(node, node, constantOf, kept.inputs, seen);

  auto graph = std::make_shared<torch::jit::Graph>();
  std::unordered_map<tj::Value *, tj::Value *> mapping;
  for (tj::Value *input : kept.inputs)
    mapping[input] = graph->addInput()->setType(input->type());
  auto lookup = [&](tj::Value *value) -> tj::Value * {
    if (auto it = mapping.find(value); it != mapping.end())
      return it->second;
    // A constant from outside (or a value the caller folds): the graph
    // makes its own.
    if (value->node()->kind() != c10::prim::Constant)
      return mapping[value] = graph->insertConstant(*constantOf(value));
    Node *constant = graph->createClone(value->node(), nullptr);
    graph->insertNode(constant);
    return mapping[value] = constant->output();
  };
  Node *clone = graph->createClone(node, lookup, /*copy_blocks=*/true);
  graph->insertNode(clone);
  for (tj::Value *output : clone->outputs())
    graph->registerOutput(output);
  makeParseable(graph->block(), *graph);
  // The text names no source file or module path: it travels in the
  // compiled module, and the op's location says where it came from.
  graph->block()->param_node()->setSourceRange(torch::jit::SourceRange());
  forEachInside(clone, [](Node *inner) {
    inner->setSourceRange(torch::jit::SourceRange());
    if (inner->hasAttribute(kModulePathAttr))
      inner->removeAttribute(kModulePathAttr);
  });
  clone->setSourceRange(torch::jit::SourceRange());
  if (clone->hasAttribute(kModulePathAttr))
    clone->removeAttribute(kModulePathAttr);

  // The effects of what runs inside. Raising is not one: a rerun raises
  // only where the first run already has.
  std::map<tj::Value *, size_t> inputPosition;
  for (size_t i = 0; i < graph->inputs().size(); ++i)
    inputPosition[graph->inputs()[i]] = i;
  forEachInside(clone, [&](Node *inner) {
    if (inner->kind() == c10::prim::RaiseException)
      return;
    if (inner->maybeSchema() && inner->isNondeterministic())
      kept.nondeterministic = true;
    if (inner->hasSideEffects())
      kept.sideEffects = true;
    for (size_t i = 0; i < inner->inputs().size(); ++i) {
      if (!writesInput(inner, i))
        continue;
      auto position = inputPosition.find(inner->input(i));
      if (position != inputPosition.end()) {
        kept.written.push_back(position->second);
        continue;
      }
      // A write through a view made inside may reach any tensor input.
      if (mayAliasInput(inner->input(i)))
        for (size_t j = 0; j < kept.inputs.size(); ++j)
          if (kept.inputs[j]->type()->kind() == c10::TypeKind::TensorType)
            kept.written.push_back(j);
    }
  });
  llvm::sort(kept.written);
  kept.written.erase(llvm::unique(kept.written), kept.written.end());

  kept.script = ::memopt::runtime::normalizeRegionIR(
      graph->toString(/*print_source_locations=*/false));
  try {
    torch::jit::Graph reread;
    torch::jit::parseIR(kept.script, &reread);
  } catch (const std::exception &e) {
    throw ImportError(
        std::string("cannot keep ") + node->kind().toQualString() +
            " on tensor data: its graph does not read back: " +
            ::memopt::runtime::describeRegionIRParseError(e.what()),
        node);
  }
  return kept;
}

std::vector<c10::IValue>
mlir::memopt::detail::runKeptControlFlow(const KeptControlFlow &kept,
                                         torch::jit::Stack inputs,
                                         std::optional<bool> branch) {
  std::shared_ptr<torch::jit::Graph> graph =
      ::memopt::kept::parseBoundedScript(kept.script);
  if (branch)
    inputs.at(0) = c10::IValue(*branch);
  at::NoGradGuard noGrad;
  torch::jit::Code code(graph, "memopt_kept");
  torch::jit::InterpreterState(code).run(inputs);
  return inputs;
}
