//===- CheckpointOps.cpp - Save policies and the memopt::checkpoint op ----===//

#include "CheckpointRegion.h"
#include "memopt/Runtime/Checkpoint.h"
#include "memopt/Runtime/OpSchemas.h"

#include <c10/util/Exception.h>
#include <torch/library.h>

namespace memopt::runtime {

SavePolicy SavePolicy::parse(const std::string &text) {
  static const char *kForms = "keep, compress:<bit|bool|uint8|sparse>[:check], "
                              "offload:host[@<region>], "
                              "offload:unified[@<region>]";
  SavePolicy p;
  if (text == "keep")
    return p;
  const std::string offload = "offload:";
  if (text.rfind(offload, 0) == 0) {
    size_t at = text.find('@');
    std::string target = text.substr(offload.size(), at == std::string::npos
                                                         ? std::string::npos
                                                         : at - offload.size());
    TORCH_CHECK(target == "host" || target == "unified",
                "memopt: unknown save policy '", text,
                "' (expected one of: ", kForms, ")");
    p.kind =
        target == "host" ? SaveKind::OffloadHost : SaveKind::OffloadUnified;
    if (at != std::string::npos) {
      p.prefetchAt = text.substr(at + 1);
      TORCH_CHECK(!p.prefetchAt.empty(), "memopt: save policy '", text,
                  "' names no region after '@'");
    }
    return p;
  }
  const std::string compress = "compress:";
  TORCH_CHECK(text.rfind(compress, 0) == 0, "memopt: unknown save policy '",
              text, "' (expected one of: ", kForms, ")");
  std::string kind = text.substr(compress.size());
  const std::string checkSuffix = ":check";
  if (kind.size() > checkSuffix.size() &&
      kind.compare(kind.size() - checkSuffix.size(), checkSuffix.size(),
                   checkSuffix) == 0) {
    p.check = true;
    kind.resize(kind.size() - checkSuffix.size());
  }
  TORCH_CHECK(kind == "bit" || kind == "bool" || kind == "uint8" ||
                  kind == "sparse",
              "memopt: unknown save policy '", text,
              "' (expected one of: ", kForms, ")");
  p.kind = SaveKind::Compress;
  p.compression = parseCompressionKind(kind);
  return p;
}

std::string SavePolicy::str() const {
  switch (kind) {
  case SaveKind::Keep:
    return "keep";
  case SaveKind::OffloadHost:
    return "offload:host" + (prefetchAt.empty() ? "" : "@" + prefetchAt);
  case SaveKind::OffloadUnified:
    return "offload:unified" + (prefetchAt.empty() ? "" : "@" + prefetchAt);
  case SaveKind::Compress:
    return std::string("compress:") + compressionKindName(compression) +
           (check ? ":check" : "");
  }
  return "?";
}

std::vector<at::Tensor> checkpoint(const std::string &graph,
                                   at::TensorList inputs,
                                   c10::ArrayRef<c10::Scalar> scalars,
                                   const std::vector<std::string> &policies,
                                   const std::string &name) {
  std::shared_ptr<const Region> region = Region::get(graph, name);
  region->checkCall(inputs, scalars, name);
  TORCH_CHECK(policies.empty() || policies.size() == inputs.size(),
              "memopt::checkpoint(region '", name, "'): ", policies.size(),
              " save policies for ", inputs.size(),
              " input tensors (give one per tensor, or none for keep)");
  std::vector<SavePolicy> parsed;
  parsed.reserve(policies.size());
  for (const std::string &p : policies)
    parsed.push_back(SavePolicy::parse(p));
  return runCheckpoint(std::move(region), inputs, scalars, parsed, name);
}

std::vector<at::Tensor>
checkpoint(const std::string &graph, at::TensorList inputs,
           c10::ArrayRef<int64_t> ints, c10::ArrayRef<double> floats,
           const std::vector<std::string> &policies, const std::string &name) {
  std::shared_ptr<const Region> region = Region::get(graph, name);
  // Each scalar graph input takes the next int (int and bool inputs) or the
  // next float, in graph order.
  std::vector<c10::Scalar> scalars;
  size_t nextInt = 0, nextFloat = 0;
  for (c10::TypeKind kind : region->scalarKinds()) {
    TORCH_CHECK(kind != c10::TypeKind::NumberType,
                "memopt::checkpoint(region '", name,
                "'): a graph input of type Scalar needs the Scalar[] "
                "form of memopt::checkpoint");
    if (kind == c10::TypeKind::FloatType) {
      TORCH_CHECK(nextFloat < floats.size(), "memopt::checkpoint(region '",
                  name, "'): the graph takes more float inputs than the ",
                  floats.size(), " given");
      scalars.emplace_back(floats[nextFloat++]);
    } else {
      TORCH_CHECK(nextInt < ints.size(), "memopt::checkpoint(region '", name,
                  "'): the graph takes more int/bool inputs than the ",
                  ints.size(), " given");
      scalars.emplace_back(ints[nextInt++]);
    }
  }
  TORCH_CHECK(nextInt == ints.size() && nextFloat == floats.size(),
              "memopt::checkpoint(region '", name, "'): the graph takes ",
              nextInt, " int/bool and ", nextFloat,
              " float inputs but the call passes ", ints.size(), " ints and ",
              floats.size(), " floats");
  return checkpoint(graph, inputs, scalars, policies, name);
}

namespace {
std::vector<at::Tensor>
checkpointTypedOp(std::string graph, std::vector<at::Tensor> inputs,
                  std::vector<int64_t> ints, std::vector<double> floats,
                  std::vector<std::string> policies, std::string name) {
  return checkpoint(graph, inputs, ints, floats, policies, name);
}

std::vector<at::Tensor> checkpointOp(std::string graph,
                                     std::vector<at::Tensor> inputs,
                                     std::vector<c10::Scalar> scalars,
                                     std::vector<std::string> policies,
                                     std::string name) {
  return checkpoint(graph, inputs, scalars, policies, name);
}
} // namespace
} // namespace memopt::runtime

TORCH_LIBRARY_FRAGMENT(memopt, m) {
  // CompositeImplicitAutograd: the kernel builds its own autograd node
  // (CheckpointFunction), so it works the same from Python and TorchScript.
  m.def("checkpoint(str graph, Tensor[] inputs, Scalar[] scalars, "
        "str[] policies, str name) -> Tensor[]",
        torch::dispatch(c10::DispatchKey::CompositeImplicitAutograd,
                        TORCH_FN(memopt::runtime::checkpointOp)));
  // The same with the scalars split by type: TorchScript source cannot build
  // a Scalar[] (List[number]) from literals, but can build int[] and float[].
  m.def(memopt::schemas::kCheckpointTyped,
        torch::dispatch(c10::DispatchKey::CompositeImplicitAutograd,
                        TORCH_FN(memopt::runtime::checkpointTypedOp)));
}
