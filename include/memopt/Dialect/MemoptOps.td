//===- MemoptOps.td - memopt operations --------------------*- tablegen -*-===//
#ifndef MEMOPT_OPS_TD
#define MEMOPT_OPS_TD

include "memopt/Dialect/MemoptTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Graph operations
//===----------------------------------------------------------------------===//

def Memopt_TorchOp : Memopt_Op<"op", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "a call of any TorchScript operator";
  let description = [{
    Carries one TorchScript node by its qualified operator name, with every
    argument in schema order: `#memopt.arg<N>` marks the N-th SSA operand,
    any other entry is a constant argument kept exactly (integers, floats,
    booleans, strings, nested lists, `#memopt.none`).

    ```mlir
    %y = memopt.op "aten::conv2d"(%x, %w, %b)
           [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
           : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x32x32xf32>
    ```

    Aliasing and effects come from the operator's schema at import:
    `mutates` lists operands written in place (`aten::add_`, batch-norm's
    running statistics), `views` gives for each result the operand it aliases
    or -1, `nondeterministic` marks random operators (dropout) and
    `side_effects` anything else that must neither move nor disappear. Every
    `memopt.op` reads memory; one with any of these flags also writes it, so
    no pass moves another op across it.

    `saved_input = #memopt.compress<bit>` (set by `memopt-pack-saved-inputs`
    on a convolution or linear layer whose input is provably binary) makes
    autograd keep operand 0 packed instead of at full width: the exporter
    calls the runtime's `memopt::conv_packed` / `memopt::linear_packed`,
    which unpack it for the backward pass. Nothing is recomputed.

    `saved_form` (set by `memopt-insert-saved-forms` where no other op keeps
    the tensor) replaces what autograd saves by what the backward formula
    reads: `#memopt.saved<mask>` on `aten::relu` / `aten::relu_` keeps one
    bit per value (where the result is positive) instead of the result
    (`memopt::relu_masked`), and on `aten::dropout` one bit per value
    (whether it was kept) instead of the input-sized noise tensor ATen's CPU
    dropout keeps (`memopt::dropout_masked`, which makes the same random
    draws); `#memopt.saved<indices>` on `aten::max_pool2d`
    keeps the argmax indices and the input's shape but not the input
    (`memopt::max_pool2d_lean`). Gradients are unchanged, bit for bit.

    `backward = #memopt.backward<by_channel>` (set by
    `memopt-chunk-batch-norm-backward` on a training-mode `aten::batch_norm`) runs
    its CPU backward kernel a few channels at a time
    (`memopt::batch_norm_by_channel`): the kernel's input-sized transient
    buffer shrinks to a chunk. Each channel's gradient is computed from that
    channel alone, so gradients are unchanged, bit for bit.

    `backward = #memopt.backward<weight_rows>` (set by
    `memopt-chunk-weight-gradients` on an `aten::linear` with a large
    parameter weight, when `.grad` stays allocated between steps) writes
    the weight gradient straight into a `.grad` that holds +0 (after
    `zero_grad(set_to_none=False)`) and adds +0 there
    (`memopt::linear_weight_rows`), instead of one weight-sized temporary
    that autograd adds at the end: the product eager computes, so `.grad`
    is unchanged, bit for bit, whatever the BLAS. A `.grad` that already
    holds a gradient (gradient accumulation) gets eager's temporary.

    `script` (set by the importer) carries control flow whose condition or
    trip count depends on tensor data, kept whole instead of folded: a
    `prim::If` or `prim::Loop` as the text of a TorchScript graph whose
    inputs are the op's operands, in order, and whose outputs are its
    results. The exporter inlines that graph, so the branch taken or the
    number of iterations is decided when the model runs, and autograd
    records what ran. The kernel probe measures each branch of a
    `prim::If` (a `prim::Loop`: one run on its own data) and sets
    `measured_saves` and `high_water` from the heaviest; one it cannot run
    (an operand neither the condition nor a static tensor) is an unknown
    op to the memory model (every tensor operand and result taken as
    saved).

    ```mlir
    %y = memopt.op "prim::If"(%c, %x) [#memopt.arg<0>, #memopt.arg<1>]
           {script = "graph(%c : bool, %x : Tensor): ..."}
           : (i1, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```

    `high_water = #memopt.high_water<...>` (set by `memopt-compile`'s kernel
    probe on convolutions, recurrent layers, kept control flow and
    operators the saved-tensor table lacks) gives the measured peak memory
    of the op's forward and backward kernels, and `measured_saves =
    #memopt.saves<...>` (all but convolutions) what autograd keeps for its
    backward, the backward then priced whole from `high_water`; they change
    only what the memory model predicts.

    `channels_last` (set by the importer) lists the operands whose tensors
    had channels-last strides when the model ran at import, as a permute
    back from NHWC leaves them (ConvNeXt's LayerNorm2d). ATen runs a
    convolution on such an input with channels-last kernels, whose
    transient buffers differ (a depthwise 7x7 backward: four times the
    contiguous one's); the kernel probe runs it the same way.

    `dense_order` (set by the kernel probe on an op it runs alone) says how
    the op's first result is laid out: permuted by these dims it is
    contiguous (`[0, 1, 2, 3]`: contiguous; `[0, 2, 1, 3]`: a dense
    (B, T, H, D) tensor returned as (B, H, T, D), as CPU flash attention
    returns its output). The memory model follows it through transposes
    and permutes, so that `y.transpose(1, 2).contiguous()` costs no copy
    where the transpose makes it dense again.
  }];
  let arguments = (ins
    StrAttr:$name,
    Variadic<AnyType>:$operands,
    ArrayAttr:$args,
    OptionalAttr<StrAttr>:$overload,
    OptionalAttr<DenseI64ArrayAttr>:$mutates,
    OptionalAttr<DenseI64ArrayAttr>:$views,
    UnitAttr:$nondeterministic,
    UnitAttr:$side_effects,
    OptionalAttr<Memopt_CompressPolicyAttr>:$saved_input,
    OptionalAttr<Memopt_SavedFormAttr>:$saved_form,
    OptionalAttr<Memopt_BackwardKernelAttr>:$backward,
    OptionalAttr<Memopt_KernelHighWaterAttr>:$high_water,
    OptionalAttr<DenseI64ArrayAttr>:$channels_last,
    OptionalAttr<DenseI64ArrayAttr>:$dense_order,
    OptionalAttr<Memopt_MeasuredSavesAttr>:$measured_saves,
    OptionalAttr<StrAttr>:$script);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $name `(` $operands `)` $args attr-dict `:` functional-type($operands, $results)
  }];
  let builders = [
    // A call with no flags or marks: what passes that add ops need.
    OpBuilder<(ins "TypeRange":$resultTypes, "StringRef":$name,
                   "ValueRange":$operands, "ArrayAttr":$args), [{
      $_state.addOperands(operands);
      $_state.addTypes(resultTypes);
      Properties &properties = $_state.getOrAddProperties<Properties>();
      properties.name = $_builder.getStringAttr(name);
      properties.args = args;
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True when the op neither writes memory nor draws random numbers.
    bool isFunctional();
    /// True for `aten::batch_norm` with its nine arguments and a constant
    /// `training = true` (what memopt::batch_norm_by_channel replaces).
    bool isTrainingBatchNorm();
    /// The SSA operand at argument `position`; null for a constant
    /// argument or a position past the last.
    Value getOperandArg(unsigned position);
    /// The static tensor type of argument `position` when it is an operand.
    RankedTensorType getStaticTensorArg(unsigned position);
    /// The integers of argument `position` when it is a constant int or
    /// int list.
    std::optional<SmallVector<int64_t>> getConstantIntsArg(unsigned position);
    /// The integers of `attr` when it is an array of integer attributes.
    static std::optional<SmallVector<int64_t>> getIntegers(Attribute attr);
    /// The elements of `list` when a `prim::ListConstruct` of SSA operands
    /// only (no constant entries) defines it.
    static std::optional<OperandRange> getConstructedElements(Value list);
    /// The operand that element `position` of `list` stands for, where an
    /// op maps a constructed list element by element (`aten::broadcast_tensors`:
    /// element i is a view of input i, and needs a gradient only where
    /// that input does); null otherwise.
    static Value getElementwiseListSource(Value list, int64_t position);
    /// Whether no op writes `list` after it is built: a
    /// `prim::ListConstruct` whose users are all memopt.ops that do not
    /// mutate it (an `append` would hold more than the construction says).
    static bool isReadOnlyList(Value list);
    /// Whether every user of `value` is a memopt.op that does not mutate
    /// it (in place, `append`, `s[0] = 1`), whatever defines it.
    static bool hasNoWritingUse(Value value);
  }];
}

class Memopt_StateOp<string mnemonic, string what> : Memopt_Op<mnemonic, [Pure]> {
  let summary = "a module " # what # " named by its qualified path";
  let results = (outs AnyTensor:$result);
  let hasVerifier = 1;
}

def Memopt_ParamOp : Memopt_StateOp<"param", "parameter"> {
  let description = [{
    `memopt.param "layer1.0.conv1.weight" : tensor<64x64x3x3xf32>` is the
    parameter with that `state_dict` key. `frozen` means `requires_grad` is
    false.
  }];
  let arguments = (ins StrAttr:$path, UnitAttr:$frozen);
  let assemblyFormat = "$path (`frozen` $frozen^)? attr-dict `:` type($result)";
}

def Memopt_BufferOp : Memopt_StateOp<"buffer", "buffer"> {
  let description = [{
    `memopt.buffer "bn1.running_mean" : tensor<64xf32>` is the buffer with
    that key. `transient` marks module state outside `state_dict`: a tensor
    kept as a plain attribute (`self.mask = ...` without `register_buffer`),
    which the exported module keeps as such.
    Writes to buffers are `memopt.op`s that list them in `mutates`.
  }];
  let arguments = (ins StrAttr:$path, UnitAttr:$transient);
  let assemblyFormat = "$path (`transient` $transient^)? attr-dict `:` type($result)";
}

def Memopt_GetAttrOp : Memopt_Op<"get_attr", [
    MemoryEffects<[MemRead]>]> {
  let summary = "read a non-tensor module attribute (e.g. `bn1.training`)";
  let arguments = (ins StrAttr:$path);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$path attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The value the enclosing function assumes this attribute has
    /// (`memopt.assumes`: the exported module checks it before running),
    /// or null.
    Attribute getAssumedValue();
  }];
}

def Memopt_SetAttrOp : Memopt_Op<"set_attr", [
    MemoryEffects<[MemWrite]>]> {
  let summary = "assign a module attribute in forward (prim::SetAttr)";
  let description = [{
    An explicit side effect: state of stateful neurons, counters. Nothing is
    moved across it and a checkpoint region may not contain it.
  }];
  let arguments = (ins StrAttr:$path, AnyType:$value);
  let assemblyFormat = "$path `=` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Checkpoint regions
//===----------------------------------------------------------------------===//

def Memopt_CheckpointOp : Memopt_Op<"checkpoint", [
    IsolatedFromAbove, SingleBlock, RecursiveMemoryEffects]> {
  let summary = "a region recomputed in backward instead of being kept";
  let description = [{
    Forward runs the body without keeping its intermediates; only the inputs
    are saved, each by its policy (`#memopt.keep`, `#memopt.compress<bit>`,
    `#memopt.offload<host>`, ...). Backward restores the inputs, replays the
    random state and reruns the body with grad.

    `prefetch_at` (set by `memopt-schedule-prefetch` on regions with
    offloaded inputs) names the region whose backward starts bringing this
    region's offloaded inputs back, so the copy overlaps the backward of the
    regions in between; without it they come back when this region's own
    backward starts. The named region must be this one or a later one of
    the same block, and its label must be unique there.

    `offload_held_for = N` (set with it) says that the copies of the
    offloaded inputs to the host are still running while the next N ops of
    the block run forward: the caching allocator keeps a tensor until the
    side stream has read it, so its device bytes stay live until then.

    ```mlir
    %r = memopt.checkpoint "layer1" (%x, %w) policies [#memopt.compress<bit>, #memopt.keep]
        : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32> {
    ^bb0(%a: tensor<8x16xf32>, %b: tensor<16x16xf32>):
      %y = memopt.op "aten::matmul"(%a, %b) [#memopt.arg<0>, #memopt.arg<1>]
          : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
      memopt.yield %y : tensor<8x16xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$label, Variadic<AnyType>:$inputs,
                       ArrayAttr:$policies, OptionalAttr<StrAttr>:$prefetch_at,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$offload_held_for);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let builders = [
    // A region without a prefetch schedule (memopt-schedule-prefetch sets it).
    OpBuilder<(ins "::mlir::TypeRange":$resultTypes, "::mlir::StringAttr":$label,
                   "::mlir::ValueRange":$inputs, "::mlir::ArrayAttr":$policies), [{
      build($_builder, $_state, resultTypes, label, inputs, policies,
            /*prefetch_at=*/nullptr, /*offload_held_for=*/nullptr);
    }]>
  ];
  let assemblyFormat = [{
    $label `(` $inputs `)` `policies` $policies attr-dict `:`
    functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    ::mlir::LogicalResult verifyPrefetchAt();
    /// The region whose backward start brings the offloaded inputs back:
    /// `prefetch_at`, or this region itself.
    ::llvm::StringRef getPrefetchTrigger() {
      return getPrefetchAt().value_or(getLabel());
    }
  }];
}

def Memopt_YieldOp : Memopt_Op<"yield", [
    Pure, Terminator, ReturnLike, HasParent<"CheckpointOp">]> {
  let summary = "the results of a checkpoint region";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compression
//===----------------------------------------------------------------------===//

def Memopt_CompressOp : Memopt_Op<"compress", [Pure]> {
  let summary = "pack a binary or small-integer tensor";
  let description = [{
    `check` makes the runtime verify that every value is representable and
    fail on the first that is not, instead of packing it wrongly.
  }];
  let arguments = (ins Memopt_FloatTensor:$input, UnitAttr:$check);
  let results = (outs Memopt_PackedTensorType:$result);
  let assemblyFormat = [{
    $input (`check` $check^)? attr-dict `:` type($input) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Memopt_DecompressOp : Memopt_Op<"decompress", [Pure]> {
  let summary = "restore the logical tensor of a packed tensor";
  let arguments = (ins Memopt_PackedTensorType:$input);
  let results = (outs Memopt_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Offload
//===----------------------------------------------------------------------===//

def Memopt_OffloadOp : Memopt_Op<"offload", [MemoryEffects<[MemWrite]>]> {
  let summary = "start copying a saved tensor to host memory";
  let arguments = (ins Memopt_OffloadKind:$kind, Memopt_SavedValue:$input);
  let results = (outs Memopt_HostTensorType:$host, Memopt_TokenType:$done);
  let assemblyFormat = "$kind $input attr-dict `:` type($input) `->` qualified(type($host))";
  let hasVerifier = 1;
}

def Memopt_PrefetchOp : Memopt_Op<"prefetch", [MemoryEffects<[MemWrite]>]> {
  let summary = "start bringing an offloaded tensor back to the device";
  let description = [{
    `after` orders the copy behind other copies (the offload's token, or an
    earlier prefetch when the prefetch depth is bounded).
  }];
  let arguments = (ins Memopt_HostTensorType:$host,
                       Variadic<Memopt_TokenType>:$after);
  let results = (outs Memopt_TokenType:$done);
  let assemblyFormat = "$host (`after` $after^)? attr-dict `:` qualified(type($host))";
}

def Memopt_WaitOp : Memopt_Op<"wait", [
    MemoryEffects<[MemRead]>,
    TypesMatchWith<"result is the host tensor's payload", "host", "result",
                   "::llvm::cast<HostTensorType>($_self).getPayload()">]> {
  let summary = "block until a prefetch finished and use its tensor";
  let arguments = (ins Memopt_TokenType:$ready, Memopt_HostTensorType:$host);
  let results = (outs Memopt_SavedValue:$result);
  let assemblyFormat = "$ready `,` $host attr-dict `:` qualified(type($host))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Specialization
//===----------------------------------------------------------------------===//

def Memopt_DispatchOp : Memopt_Op<"dispatch", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "call the function specialized for the inputs' signature";
  let description = [{
    Cases are tried in order; the first whose guard types all equal the
    operands' runtime types is called. Otherwise `fallback` is called; a
    dispatch without fallback must be `strict` and fails at run time with a
    message naming the unmatched signature.

    ```mlir
    %r = memopt.dispatch (%x) cases [
        #memopt.case<[tensor<64x3x32x32xf32>] -> @forward_b64, count = 90>,
        #memopt.case<[tensor<8x3x32x32xf32>] -> @forward_b8, count = 10>]
        fallback @forward_generic : (tensor<?x3x32x32xf32>) -> tensor<?x10xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, ArrayAttr:$cases,
                       OptionalAttr<FlatSymbolRefAttr>:$fallback,
                       UnitAttr:$strict);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    `(` $inputs `)` `cases` $cases (`fallback` $fallback^)? (`strict` $strict^)?
    attr-dict `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

#endif // MEMOPT_OPS_TD
