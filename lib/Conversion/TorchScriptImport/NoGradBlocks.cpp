//===- NoGradBlocks.cpp - `with torch.no_grad():` in forward --------------===//
//
// Autograd records nothing for an op whose tensor inputs do not require
// gradients, and an op inside a no_grad block records nothing whatever its
// inputs. So the block is the same computation as its ops run on detached
// inputs: every tensor that enters it (a value from before it, a parameter
// or buffer read inside it) is read through aten::detach, and the block's
// prim::Enter / prim::Exit go. The kernels are the same, so the results are
// bitwise the same; nothing inside is saved for backward, and what leaves
// the block does not require gradients, which is what the memory model and
// the planner see (a teacher network's forward, a momentum encoder, a
// target computed from the model's own outputs). In-place writes inside
// (a batch norm's running statistics, an update of a parameter through
// `p.mul_()`) reach the same storage through the detached alias, bumping
// the same version counter.
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

using namespace mlir::memopt::detail;
namespace tj = torch::jit;
using tj::Node;

static constexpr const char *kNoGradClass =
    "__torch__.torch.autograd.grad_mode.no_grad";

bool mlir::memopt::detail::isNoGradBlock(const Node *enter) {
  if (enter->kind() != c10::prim::Enter || enter->inputs().empty())
    return false;
  auto type = enter->input(0)->type()->cast<c10::ClassType>();
  return type && type->name() && type->name()->qualifiedName() == kNoGradClass;
}

/// Tensors, and containers of them. Objects do not count: a module's
/// tensors are read inside through prim::GetAttr, which is detached.
static bool carriesTensor(const c10::TypePtr &type) {
  if (type->cast<c10::ClassType>())
    return false;
  return type->kind() == c10::TypeKind::TensorType ||
         llvm::any_of(type->containedTypes(), carriesTensor);
}

/// The node of `block` that holds `node` (itself when it is in `block`), or
/// null when `node` is not inside `block`.
static Node *ancestorIn(Node *node, const tj::Block *block) {
  while (node && node->owningBlock() != block)
    node = node->owningBlock() ? node->owningBlock()->owningNode() : nullptr;
  return node;
}

namespace {
/// One no_grad block: the nodes strictly between its Enter and Exit.
struct Span {
  Node *enter;
  Node *exit;
  bool contains(Node *node) const {
    if (node == enter->owningBlock()->param_node())
      return false;
    Node *top = ancestorIn(node, enter->owningBlock());
    return top && enter->isBefore(top) && top->isBefore(exit);
  }
};
} // namespace

/// Calls `visit` on every node inside `node` at any depth, and on the
/// return nodes of its blocks (which use the values a branch returns).
static void forEachUser(Node *node, llvm::function_ref<void(Node *)> visit) {
  visit(node);
  for (tj::Block *block : node->blocks()) {
    for (Node *inner : block->nodes())
      forEachUser(inner, visit);
    visit(block->return_node());
  }
}

Node *mlir::memopt::detail::lowerNoGradBlock(
    Node *enter, const std::function<std::optional<bool>(tj::Value *)> &isNone,
    std::vector<Node *> &dead) {
  tj::Value *context = enter->input(0);
  Node *exit = nullptr;
  for (Node *node = enter->next(); node != enter->owningBlock()->return_node();
       node = node->next())
    if (node->kind() == c10::prim::Exit && node->input(0) == context) {
      exit = node;
      break;
    }
  if (!exit)
    throw ImportError("a torch.no_grad() block has no end in its own block",
                      enter);
  if (llvm::any_of(exit->outputs(),
                   [](tj::Value *v) { return v->hasUses(); }) ||
      llvm::any_of(enter->outputs(), [](tj::Value *v) { return v->hasUses(); }))
    throw ImportError("the value of a torch.no_grad() context is used", enter);
  Span span{enter, exit};

  // Which uses read a tensor that may require gradients: one made before
  // the block, or a state read inside it.
  std::vector<std::pair<Node *, size_t>> uses;
  auto mayRequireGrad = [&](tj::Value *value) {
    return !span.contains(value->node()) ||
           value->node()->kind() == c10::prim::GetAttr;
  };
  for (Node *top = enter->next(); top != exit; top = top->next())
    forEachUser(top, [&](Node *user) {
      for (size_t i = 0; i < user->inputs().size(); ++i) {
        tj::Value *input = user->input(i);
        if (carriesTensor(input->type()) && mayRequireGrad(input))
          uses.emplace_back(user, i);
      }
    });

  // One detached alias per tensor: right after the Enter for values from
  // before the block (the walk evaluates them next), right after the read
  // for state read inside.
  torch::jit::Graph &graph = *enter->owningGraph();
  Node *cursor = enter;
  std::unordered_map<tj::Value *, tj::Value *> detached;
  auto detach = [&](tj::Value *value, Node *user) -> tj::Value * {
    if (auto it = detached.find(value); it != detached.end())
      return it->second;
    bool inside = span.contains(value->node());
    Node *after = inside ? value->node() : cursor;
    auto place = [&](Node *node) {
      node->insertAfter(after);
      node->setSourceRange(user->sourceRange());
      after = node;
    };
    tj::Value *tensor = value;
    c10::TypePtr type = value->type();
    if (auto optional = type->cast<c10::OptionalType>();
        optional &&
        optional->getElementType()->kind() == c10::TypeKind::TensorType) {
      std::optional<bool> none = isNone(value);
      if (!none)
        throw ImportError("an Optional[Tensor] whose None-ness memopt cannot "
                          "tell enters a torch.no_grad() block",
                          user);
      if (*none)
        return detached[value] = value;
      Node *cast = graph.create(c10::prim::unchecked_cast, {value});
      cast->output()->setType(c10::TensorType::get());
      place(cast);
      tensor = cast->output();
    } else if (type->kind() != c10::TypeKind::TensorType) {
      throw ImportError("a value of type " + type->str() +
                            " enters a torch.no_grad() block; memopt "
                            "detaches the tensors that enter such a block one "
                            "by one: pass them as separate tensors",
                        user);
    }
    Node *alias = graph.create(c10::aten::detach, {tensor}, 1);
    alias->output()->setType(tensor->type());
    place(alias);
    if (!inside)
      cursor = after;
    return detached[value] = alias->output();
  };
  for (auto [user, index] : uses)
    user->replaceInput(index, detach(user->input(index), user));

  // The context object, its constructor's assignments, Enter and Exit.
  dead = {exit, enter};
  Node *object = context->node();
  if (object->kind() == c10::prim::CreateObject &&
      llvm::all_of(context->uses(), [&](const torch::jit::Use &use) {
        return use.user == enter || use.user == exit ||
               (use.user->kind() == c10::prim::SetAttr && use.offset == 0);
      })) {
    for (const torch::jit::Use &use : context->uses())
      if (use.user != enter && use.user != exit)
        dead.push_back(use.user);
    dead.push_back(object);
  }
  Node *next = enter->next();
  return next == exit ? exit->next() : next;
}
