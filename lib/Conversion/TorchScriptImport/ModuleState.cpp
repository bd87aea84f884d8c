//===- ModuleState.cpp - Parameters, buffers and attributes in forward ----===//
#include "ModuleState.h"

using namespace mlir::memopt::detail;
using torch::jit::Node;
using torch::jit::Value;

static std::string join(const std::string &base, const std::string &name) {
  return base.empty() ? name : base + "." + name;
}

ModuleState::ModuleState(const torch::jit::Module &module,
                         torch::jit::Graph &graph) {
  objects[graph.inputs().at(0)] =
      StateRef{"", StateKind::Module, module._ivalue()};
  // The graph is straight-line after specialization: one pass in order.
  for (Node *node : graph.nodes()) {
    if (node->kind() != c10::prim::GetAttr &&
        node->kind() != c10::prim::SetAttr)
      continue;
    auto base = objects.find(node->input(0));
    if (base == objects.end())
      throw ImportError("attribute '" + node->s(c10::attr::name) +
                            "' is read from an object memopt cannot trace "
                            "back to the module",
                        node);
    std::string path = join(base->second.path, node->s(c10::attr::name));
    if (node->kind() == c10::prim::SetAttr) {
      assigned.insert(path);
      continue;
    }
    if (node->output()->type()->cast<c10::ClassType>()) {
      c10::IValue value =
          base->second.value.toObject()->getAttr(node->s(c10::attr::name));
      objects[node->output()] = StateRef{path, StateKind::Module, value};
    }
  }
}

StateRef ModuleState::resolve(const Node *node) const {
  const StateRef &base = objects.at(node->input(0));
  std::string name = node->s(c10::attr::name);
  StateRef ref;
  ref.path = join(base.path, name);
  auto object = base.value.toObject();
  ref.value = object->getAttr(name);
  if (node->kind() == c10::prim::GetAttr &&
      node->output()->type()->cast<c10::ClassType>()) {
    ref.kind = StateKind::Module;
    return ref;
  }
  // State that forward assigns is read in program order (memopt.get_attr),
  // never as a pure memopt.param / memopt.buffer that could move.
  if (assigned.count(ref.path) || !ref.value.isTensor())
    return ref;
  const c10::ClassTypePtr &type = object->type();
  size_t slot = type->getAttributeSlot(name);
  if (type->is_parameter(slot))
    ref.kind = StateKind::Parameter;
  else if (type->is_buffer(slot))
    ref.kind = StateKind::Buffer;
  else
    ref.kind = StateKind::Transient;
  return ref;
}

std::vector<std::string>
ModuleState::getListedParameters(const Node *node) const {
  if (node->kind() != c10::prim::GetAttr)
    return {};
  const StateRef &base = objects.at(node->input(0));
  std::string name = node->s(c10::attr::name);
  auto object = base.value.toObject();
  c10::IValue value = object->getAttr(name);
  if (assigned.count(join(base.path, name)) || !value.isTensorList())
    return {};
  const c10::ClassTypePtr &type = object->type();
  std::vector<std::string> paths;
  for (const at::Tensor &element : value.toTensorVector()) {
    std::string found;
    for (size_t slot = 0; slot < type->numAttributes() && found.empty(); ++slot)
      if (type->is_parameter(slot) && object->getSlot(slot).isTensor() &&
          object->getSlot(slot).toTensor().is_same(element))
        found = join(base.path, type->getAttributeName(slot));
    if (found.empty())
      return {};
    paths.push_back(found);
  }
  return paths;
}
