//===- MemoptAttrs.td - memopt attributes and enums --------*- tablegen -*-===//
#ifndef MEMOPT_ATTRS_TD
#define MEMOPT_ATTRS_TD

include "memopt/Dialect/MemoptDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Memopt_CompressionKind : I32EnumAttr<"CompressionKind",
    "how a saved tensor is packed", [
      I32EnumAttrCase<"bit", 0>,     // 0/1 values, 8 per byte
      I32EnumAttrCase<"bool_", 1, "bool">, // 0/1 values, one byte each
      I32EnumAttrCase<"uint8", 2>,   // integers in [0, 255], one byte each
      I32EnumAttrCase<"sparse", 3>,  // indices of the ones of a 0/1 tensor
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::memopt";
}

// Printed as a bare keyword in op syntax (`memopt.offload host %x`).
def Memopt_OffloadKind : I32EnumAttr<"OffloadKind",
    "where an offloaded tensor lives", [
      I32EnumAttrCase<"host", 0>,     // pinned host pool, copied on a side stream
      I32EnumAttrCase<"unified", 1>,  // managed memory, prefetched and advised
    ]> {
  let cppNamespace = "::mlir::memopt";
}

def Memopt_SavedForm : I32EnumAttr<"SavedForm",
    "what autograd keeps of an activation instead of the tensor", [
      // One bit per value: where the gradient passes (ReLU's result > 0,
      // the values dropout kept).
      I32EnumAttrCase<"mask", 0>,
      // A max-pool's argmax indices and its input's shape, not its input.
      I32EnumAttrCase<"indices", 1>,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::memopt";
}

def Memopt_BackwardKernel : I32EnumAttr<"BackwardKernel",
    "how an op's backward runs instead of ATen's kernel as a whole", [
      // ATen's kernel a few channels at a time (batch-norm: its CPU kernel
      // allocates an input-sized buffer next to the input gradient).
      I32EnumAttrCase<"by_channel", 0>,
      // A linear layer's weight gradient written straight into a resident
      // `.grad` of +0 (instead of one weight-sized temporary added at the
      // end). Named for the row blocks it was once added in.
      I32EnumAttrCase<"weight_rows", 1>,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::memopt";
}

class Memopt_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Memopt_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}


//===----------------------------------------------------------------------===//
// Arguments of memopt.op
//===----------------------------------------------------------------------===//

def Memopt_OperandRefAttr : Memopt_Attr<"OperandRef", "arg"> {
  let summary = "a TorchScript argument that is an SSA operand";
  let description = [{
    In the `args` list of `memopt.op`, `#memopt.arg<N>` stands for the op's
    N-th SSA operand at that argument position; every other entry is a
    constant argument kept verbatim.
  }];
  let parameters = (ins "unsigned":$index);
  let assemblyFormat = "`<` $index `>`";
}

def Memopt_NoneAttr : Memopt_Attr<"None", "none"> {
  let summary = "the TorchScript `None` constant";
}

//===----------------------------------------------------------------------===//
// Save policies of checkpoint-region inputs
//===----------------------------------------------------------------------===//

def Memopt_KeepPolicyAttr : Memopt_Attr<"KeepPolicy", "keep"> {
  let summary = "save the region input as it is";
}

def Memopt_CompressPolicyAttr : Memopt_Attr<"CompressPolicy", "compress"> {
  let summary = "save the region input packed with a compression kind";
  let parameters = (ins EnumParameter<Memopt_CompressionKind>:$kind);
  let assemblyFormat = "`<` $kind `>`";
}

def Memopt_OffloadPolicyAttr : Memopt_Attr<"OffloadPolicy", "offload"> {
  let summary = "save the region input in host or unified memory";
  let parameters = (ins EnumParameter<Memopt_OffloadKind>:$kind);
  let assemblyFormat = "`<` $kind `>`";
}

def Memopt_SavedFormAttr : Memopt_Attr<"SavedForm", "saved"> {
  let summary = "what autograd keeps for an op's backward instead of a tensor";
  let parameters = (ins EnumParameter<Memopt_SavedForm>:$form);
  let assemblyFormat = "`<` $form `>`";
}

def Memopt_BackwardKernelAttr : Memopt_Attr<"BackwardKernel", "backward"> {
  let summary = "how an op's backward kernel runs (same gradients, less memory)";
  let parameters = (ins EnumParameter<Memopt_BackwardKernel>:$kernel);
  let assemblyFormat = "`<` $kernel `>`";
}

//===----------------------------------------------------------------------===//
// Measured kernel memory
//===----------------------------------------------------------------------===//

def Memopt_KernelHighWaterAttr : Memopt_Attr<"KernelHighWater", "high_water"> {
  let summary = "an op's kernels' high-water marks, measured by running them";
  let description = [{
    `high_water = #memopt.high_water<forward = 8192, backward = [-1, 12288, 4096, 16384]>`
    on a `memopt.op` (set by `memopt-compile`'s kernel probe, which runs the
    op once at its static shapes under the counting CPU allocator) replaces
    the training-memory model's workspace formula for that op: `forward` is
    the forward kernel's high-water mark in bytes above what was live before
    it, counting its result; `backward[m]` the backward's, counting the
    gradients it returns, where bit 0 of `m` says the input gets a gradient
    and bit 1 that the weight (and the bias, when there is one) does. -1: not
    measured (the model's formula applies). `backward` counts the incoming
    gradient as the engine frees it, once the op's first backward node has
    consumed it. Kept control flow (whose backward is many nodes) also has
    `backward_held`: the mark when the incoming gradient stays live
    throughout (the gradient of a checkpoint region's output, which the
    region holds until its backward returns).
  }];
  let parameters = (ins "int64_t":$forward,
                        ArrayRefParameter<"int64_t">:$backward,
                        DefaultValuedParameter<"int64_t", "-1">:$backwardHeld);
  let builders = [
    AttrBuilder<(ins "int64_t":$forward, "ArrayRef<int64_t>":$backward), [{
      return $_get($_ctxt, forward, backward, /*backwardHeld=*/-1);
    }]>
  ];
  let assemblyFormat = [{
    `<` `forward` `=` $forward `,` `backward` `=` `[` $backward `]`
    (`,` `backward_held` `=` $backwardHeld^)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Entries of `backward`: one per gradient mask (input, weight+bias).
    static constexpr unsigned kNumMasks = 4;
    /// The backward's high-water mark for these gradients, or -1.
    int64_t getBackward(bool inputGrad, bool weightGrad) const {
      return getBackward()[(inputGrad ? 1 : 0) | (weightGrad ? 2 : 0)];
    }
  }];
}

def Memopt_MeasuredSavesAttr : Memopt_Attr<"MeasuredSaves", "saves"> {
  let summary = "what autograd keeps for an op's backward, measured by running it";
  let description = [{
    `measured_saves = #memopt.saves<bytes = 409600, operands = [0]>` on a
    `memopt.op` (set by `memopt-compile`'s kernel probe on recurrent layer
    stacks, `aten::lstm` / `gru` / `rnn_tanh` / `rnn_relu`, whose autograd
    graph depends on the sequence length, the layer count and the kernel
    PyTorch picks; on kept control flow; on operators the saved-tensor
    table lacks) replaces the saved-tensor table for that op: `bytes` of
    new tensors its forward keeps until its backward (beyond its results),
    the SSA operands (by index) whose tensors it keeps (none: `operands`
    left out), and the elements of list operands it keeps, as flattened
    (operand, element) pairs (`elements = [0, 1]`: element 1 of the list
    operand 0; `torch.einsum` keeps a weight but only a copy of a sliced
    input), and the results it keeps (`results = [0]`: `logcumsumexp`
    keeps its output). Measured with the gradients the model asks for; every tensor
    operand that requires grad gets a new gradient buffer.
  }];
  let parameters = (ins "int64_t":$bytes,
                        OptionalArrayRefParameter<"int64_t">:$operands,
                        OptionalArrayRefParameter<"int64_t">:$elements,
                        OptionalArrayRefParameter<"int64_t">:$results);
  // `<bytes = N[, operands = [...]][, elements = [...]][, results = [...]]>`:
  // optional groups opening with the same comma need a hand-written parser.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Planner and schedule summaries (function attributes)
//===----------------------------------------------------------------------===//

// An f64 value, printed as MLIR prints an f64 (round-trips exactly).
def Memopt_SecondsParameter : APFloatParameter<"an f64 value"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = [{ $_printer.printFloat($_self) }];
}

def Memopt_FlagParameter : AttrOrTypeParameter<"bool", "true or false"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<bool> {
    if (succeeded($_parser.parseOptionalKeyword("true")))
      return true;
    if (succeeded($_parser.parseOptionalKeyword("false")))
      return false;
    return $_parser.emitError($_parser.getCurrentLocation(),
                              "expected true or false");
  }() }];
  let printer = [{ $_printer << ($_self ? "true" : "false") }];
}

def Memopt_SignatureAttr : Memopt_Attr<"Signature", "signature"> {
  let summary = "one specialization of a method for several input signatures";
  let description = [{
    `memopt.signature = #memopt.signature<index = 1, count = 5>` on the
    function the importer made for the method's second signature (of those
    given, in order), recorded 5 times (0: declared, not recorded).
    memopt-specialize-signatures builds the dispatcher from them.
  }];
  let parameters = (ins "int64_t":$index, "int64_t":$count);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Memopt_PlanGoal : I32EnumAttr<"PlanGoal",
    "what a plan was made for: a budget, or a preference without one", [
      I32EnumAttrCase<"budget", 0>,
      I32EnumAttrCase<"speed", 1>,
      I32EnumAttrCase<"balanced", 2>,
      I32EnumAttrCase<"memory", 3>,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::memopt";
}

def Memopt_PlanSummaryAttr : Memopt_Attr<"PlanSummary", "plan"> {
  let summary = "what memopt-insert-checkpoints planned for a function";
  let description = [{
    `memopt.plan = #memopt.plan<baseline_peak_bytes = 15205664,
    planned_peak_bytes = 7391528, budget_bytes = -1, feasible = true,
    min_reachable_peak_bytes = 7391528, recompute_seconds = 6.9e-03,
    step_seconds = 3.5e-02, preference = memory, segments = 41>`
    on a planned function: the predicted peak before and after the plan,
    the budget in bytes (-1: none; planned for `preference`, which is
    `budget` when one is given), whether the plan meets it, the least peak
    the search reached, the predicted recompute and step seconds, and how
    many chain segments the function had. The compile report reads it.
  }];
  let parameters = (ins "int64_t":$baseline_peak_bytes,
                        "int64_t":$planned_peak_bytes,
                        "int64_t":$budget_bytes,
                        Memopt_FlagParameter:$feasible,
                        "int64_t":$min_reachable_peak_bytes,
                        Memopt_SecondsParameter:$recompute_seconds,
                        Memopt_SecondsParameter:$step_seconds,
                        EnumParameter<Memopt_PlanGoal>:$preference,
                        "int64_t":$segments);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Memopt_PrefetchScheduleAttr : Memopt_Attr<"PrefetchSchedule", "prefetch"> {
  let summary = "memopt-schedule-prefetch's summary of a function's offload copies";
  let description = [{
    `memopt.prefetch_schedule = #memopt.prefetch<bandwidth_gbps = 55.0,
    offloaded_regions = 3, predicted_peak_bytes = N, prefetched_early = 2,
    stall_seconds = 0.0, transfer_seconds = 1.2e-03, d2h_bandwidth_gbps =
    55.0, offload_seconds = 1.2e-03, held_regions = 1>`: the host-to-device
    bandwidth the schedule assumed (GB/s), how many regions offload their
    inputs, the predicted peak with the copies where they are, how many
    offloading regions are prefetched before their own backward, the
    seconds the prefetches take and the part of the step they cannot hide
    (waits of backward on a copy, queueing behind earlier copies on the one
    side stream included), the device-to-host bandwidth, the seconds the
    forward copies to the host take, and how many regions keep their
    inputs on the device past their own forward because the copy is still
    running (`offload_held_for`).
  }];
  let parameters = (ins Memopt_SecondsParameter:$bandwidth_gbps,
                        "int64_t":$offloaded_regions,
                        "int64_t":$predicted_peak_bytes,
                        "int64_t":$prefetched_early,
                        Memopt_SecondsParameter:$stall_seconds,
                        Memopt_SecondsParameter:$transfer_seconds,
                        Memopt_SecondsParameter:$d2h_bandwidth_gbps,
                        Memopt_SecondsParameter:$offload_seconds,
                        "int64_t":$held_regions);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Dispatch cases
//===----------------------------------------------------------------------===//

def Memopt_DispatchCaseAttr : Memopt_Attr<"DispatchCase", "case"> {
  let summary = "an exact input-signature guard and the function it calls";
  let description = [{
    `#memopt.case<[tensor<8x3x32x32xf32>] -> @forward_b8, count = 120>`
    matches when every dispatch operand has exactly the listed static type.
    `count` is how often the signature was recorded (0 when declared).
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::Type", "guard types">:$guards,
    "::mlir::FlatSymbolRefAttr":$callee,
    DefaultValuedParameter<"int64_t", "0">:$count);
  let assemblyFormat = "`<` `[` $guards `]` `->` $callee (`,` `count` `=` $count^)? `>`";
}

#endif // MEMOPT_ATTRS_TD
