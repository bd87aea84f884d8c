//===- Passes.td - memopt transformation passes ------------*- tablegen -*-===//
//
// Every pass of memopt is declared here; each is implemented in its own file
// under passes/ named after the pass.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_TRANSFORMS_PASSES_TD
#define MEMOPT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def InlineCheckpoints : Pass<"memopt-inline-checkpoints"> {
  let summary = "Replace checkpoint regions by their bodies";
  let description = [{
    Undoes recomputation: every `memopt.checkpoint` (or only those whose label
    is listed in `labels`) is replaced by the operations of its body, wired
    to the region's inputs, so autograd keeps their intermediates again. Save
    policies disappear with the region. Used to build the unoptimized
    fallback of a specialized module and to compare a plan against no plan.
  }];
  let options = [
    ListOption<"labels", "labels", "std::string",
               "Only inline regions with these labels (default: all)">,
  ];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

def InsertCheckpoints : Pass<"memopt-insert-checkpoints", "::mlir::func::FuncOp"> {
  let summary = "Plan and insert checkpoint regions under a budget or preference";
  let description = [{
    Cuts the function into a chain at the points where only tensors cross
    (residual adds and concatenations give cuts with several crossing
    tensors; unrolled time steps of a neuron loop give cuts between steps),
    describes each segment from the training-memory model, the cost model
    and the binary-value analysis, and finds the optimal plan of the chain
    by dynamic programming: which runs of segments to recompute in backward
    and whether to keep, pack (binary inputs, 1 bit per value) or offload
    (`device=cuda`) the input of each. The chosen runs become
    `memopt.checkpoint` regions labelled by module path, with a
    `memopt.reason` and `memopt.saved_bytes_avoided`; the function gets a
    `memopt.plan` summary (baseline and planned predicted peak, budget,
    feasibility, smallest reachable peak, modelled recompute time).

    Where the modelled peak falls in a region's recompute or backward, the
    region's body is planned the same way and regions are nested in it
    (rerun once more, in the enclosing region's backward), repeating while
    the peak moves into another region's body, within what is left of the
    time allowance (or, for an infeasible budget, until it is met).

    On the final function, each region is inlined on a copy and the copy
    modelled: regions the peak does not need (it stays, or drops, without
    them) are inlined for good, unless `checkpoint` names them; every other
    region gets `memopt.lowers_peak_by`, how much higher the modelled peak
    is without it.

    `budget` is bytes (`800MB`, `1.5GiB`) or a percentage of the predicted
    baseline (`40%`); a function's own `memopt.budget` attribute overrides
    it. Without a budget, `prefer` picks the least peak whose modelled extra
    time stays within 5% (speed), 12% (balanced, the default) or 25%
    (memory) of the step. An infeasible budget is an error naming the
    smallest reachable peak, unless `allow-over-budget` is set. Functions
    marked `memopt.passthrough` or already planned are left alone.
  }];
  let options = [
    Option<"budget", "budget", "std::string", "\"\"",
           "Peak budget: bytes (800MB, 1.5GiB) or a percentage (40%)">,
    Option<"prefer", "prefer", "std::string", "\"\"",
           "speed | balanced | memory (used when no budget is given)">,
    Option<"device", "device", "std::string", "\"cpu\"",
           "cpu | cuda (offload is planned only for cuda)">,
    ListOption<"checkpoint", "checkpoint", "std::string",
               "Module paths that must be recomputed">,
    ListOption<"noCheckpoint", "no-checkpoint", "std::string",
               "Module paths that must not be recomputed">,
    ListOption<"assumeBinary", "assume-binary", "std::string",
               "Module paths whose outputs the user asserts binary">,
    Option<"allowOverBudget", "allow-over-budget", "bool", "false",
           "Apply the least-peak plan when the budget cannot be met">,
    Option<"offloadBandwidth", "offload-bandwidth", "double",
           /*default=*/"::mlir::memopt::kDefaultOffloadBandwidthGBps",
           "Device<->host copy bandwidth in GB/s each way, for offload "
           "(device=cuda; H100 over PCIe Gen5: ~55); host to device only "
           "when offload-d2h-bandwidth is given">,
    Option<"offloadD2HBandwidth", "offload-d2h-bandwidth", "double",
           /*default=*/"0",
           "Device-to-host copy bandwidth in GB/s (0: offload-bandwidth)">,
    Option<"offloadPolicy", "offload-policy", "std::string", "\"host\"",
           "host (pinned host buffers) | unified (CUDA managed memory)">,
  ];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

def StampBaseline : Pass<"memopt-stamp-baseline", "::mlir::func::FuncOp"> {
  let summary = "Stamp the unplanned peak and the budget in bytes";
  let description = [{
    Runs before any pass that changes what autograd keeps. Stamps each
    function with its predicted peak as written
    (`memopt.unplanned_peak_bytes`) and, when a budget applies (the
    function's own `memopt.budget`, else `budget`), that budget in bytes
    (`memopt.budget_bytes`): a percentage refers to the stamped peak.
    The planner and the compile report read these two numbers; stamps
    already there stay. A malformed budget is an error.
  }];
  let options = [
    Option<"budget", "budget", "std::string", "\"\"",
           "Peak budget: bytes (800MB, 1.5GiB) or a percentage (40%)">,
  ];
}

def PackSavedInputs : Pass<"memopt-pack-saved-inputs", "::mlir::func::FuncOp"> {
  let summary = "Keep binary inputs of convolutions, linear layers and products packed";
  let description = [{
    Spike compression without recompute: a convolution or linear layer
    whose input is a binary activation that no other op keeps gets
    `saved_input = #memopt.compress<bit>`, so autograd keeps that input at
    1/32 of its size (runtime `memopt::conv_packed` /
    `memopt::linear_packed`). So does a product of two tensors of one type
    (`aten::mul.Tensor`, a spiking neuron's reset `v * (1 - spike)`) with a
    binary factor, which is moved to operand 0 (`memopt::mul_packed`; the
    product and both gradients are the same bits either way round).
    Binary means proven by the binary-value analysis, or asserted with
    `assume-binary` for a module path (the runtime checks asserted values
    when it packs them); a path that names no op is an error. Where the
    predicted peak is a packing op's own backward (its input unpacked
    there beside the packed copy), packs are dropped one at a time while
    that lowers the peak, so packing never raises it.
  }];
  let options = [
    ListOption<"assumeBinary", "assume-binary", "std::string",
               "Module paths whose outputs the user asserts binary">,
  ];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

def InsertSavedForms : Pass<"memopt-insert-saved-forms", "::mlir::func::FuncOp"> {
  let summary = "Keep max-pool indices and ReLU and dropout masks instead of tensors";
  let description = [{
    Ops keep less for their backward where no other op keeps the same
    tensor: `aten::max_pool2d` gets `saved_form = #memopt.saved<indices>`
    (its input is not kept: backward needs only the argmax indices and the
    input's shape), then `aten::relu` and `aten::relu_` get
    `saved_form = #memopt.saved<mask>` (one bit per value of the result:
    where the gradient passes). Gradients are unchanged bit for bit; a ReLU
    feeding a convolution gains nothing, since the convolution keeps the
    same tensor. With `dropout-masks` (off in the pipeline for
    `device=cuda`), `aten::dropout` gets `saved_form = #memopt.saved<mask>`:
    autograd keeps one bit per value (whether it was kept) instead of the
    input-sized noise tensor that ATen's CPU dropout saves
    (`memopt::dropout_masked`; same draws, same bits).
  }];
  let options = [
    Option<"dropoutMasks", "dropout-masks", "bool", "true",
           "Keep dropout masks instead of noise tensors (CPU plans)">,
  ];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

def ChunkBatchNormBackward : Pass<"memopt-chunk-batch-norm-backward", "::mlir::func::FuncOp"> {
  let summary = "Run large training-mode batch-norm backwards a chunk of channels at a time";
  let description = [{
    Every training-mode `aten::batch_norm` whose input spans more than one
    chunk of channels (a chunk: up to 1 MiB, a sixteenth of a smaller
    input, at least 64 KiB; `BatchNormChunks.h`) gets
    `backward = #memopt.backward<by_channel>`: its CPU backward runs a chunk
    at a time (`memopt::batch_norm_by_channel`) instead of allocating an
    input-sized buffer next to the input gradient. The gradients are the
    same bits. In the pipeline for CPU plans only (the runtime calls ATen's
    own kernel on other devices); `memopt-insert-checkpoints` removes the
    marks again when its plan's peak (or budget) holds without them.
  }];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

def PackRegionInputs : Pass<"memopt-pack-region-inputs", "::mlir::func::FuncOp"> {
  let summary = "Keep binary inputs of checkpoint regions packed";
  let description = [{
    Every binary input of a `memopt.checkpoint` saved with `#memopt.keep`
    is saved with `#memopt.compress<bit>` instead (1 bit per value until
    the region's backward); non-binary inputs and function inputs,
    parameters and buffers stay as they are. Binary as for
    `memopt-pack-saved-inputs`, whose `assume-binary` it takes.
  }];
  let options = [
    ListOption<"assumeBinary", "assume-binary", "std::string",
               "Module paths whose outputs the user asserts binary">,
  ];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

def SchedulePrefetch : Pass<"memopt-schedule-prefetch", "::mlir::func::FuncOp"> {
  let summary = "Schedule the side stream's copies of offloaded region inputs";
  let description = [{
    Offload is the third way to save a checkpoint region's input
    (`#memopt.offload<host>`, planned by `memopt-insert-checkpoints` with
    `device=cuda`): forward copies it to host memory on a side stream and
    frees the device copy once the copy has read it; backward must copy it
    back (prefetch) and wait for the copy before the region recomputes.
    The runtime issues every copy of a device on one side stream, so the
    copies queue: this pass models that stream as one first-in, first-out
    queue against the cost model's compute times, with the device-to-host
    (`d2h-bandwidth`) and host-to-device (`bandwidth`) rates as parameters.

    Forward: each region's copies start when its forward ends and the
    stream is free, and take their bytes over `d2h-bandwidth`; the device
    copy stays alive while the ops after the region run, until the copy is
    done. The pass writes that count as `offload_held_for = N` on the
    region, and the training-memory model keeps the bytes live through
    those N ops (`memopt-insert-checkpoints` sets the same counts on the
    plans it judges, so offload is planned knowing them).

    Backward: regions run in reverse forward order, so the prefetch of a
    region's inputs can start when the backward of a later region starts
    and overlap the backward of everything in between. A prefetch queues
    behind the forward copies still running when backward starts and
    behind the prefetches issued before it (at one trigger: the trigger's
    own inputs first, then the others nearest first, as the runtime issues
    them); backward waits where a region's inputs are not back when its
    backward starts. In the order backward needs them, each region gets the
    nearest trigger of least total wait. Prefetched bytes are live from the
    trigger on, so the schedule is then checked with the training-memory
    model: while the predicted peak exceeds the peak with every prefetch at
    its own region, the trigger farthest from its region moves one region
    closer. The choice is written as `prefetch_at = "<label>"` on the
    region (none: its own backward), the summary as
    `memopt.prefetch_schedule` on the function (both bandwidths, offloaded
    regions, regions prefetched early, regions whose copy outlasts the next
    op, the seconds of the copies each way and the part of the step the
    waits add). The exporter passes the trigger to the runtime with each
    offloaded input, which prefetches exactly there. Regions whose label is
    not unique in the function cannot be named and are not used as
    triggers.
  }];
  let options = [
    Option<"bandwidth", "bandwidth", "double",
           /*default=*/"::mlir::memopt::kDefaultOffloadBandwidthGBps",
           "Host-to-device bandwidth in GB/s (H100 over PCIe Gen5, pinned: "
           "~55; PCIe 4.0 x16: ~25)">,
    Option<"d2hBandwidth", "d2h-bandwidth", "double",
           /*default=*/"::mlir::memopt::kDefaultOffloadBandwidthGBps",
           "Device-to-host bandwidth in GB/s">,
  ];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

def SpecializeSignatures : Pass<"memopt-specialize-signatures", "::mlir::ModuleOp"> {
  let summary = "Dispatch between the per-signature functions of a method";
  let description = [{
    The importer gives each input signature its own function
    `@forward_s<i>` (`memopt.signature = #memopt.signature<index = i, count = N>`), planned
    for its exact shapes. This pass creates the entry `@forward`: one
    `memopt.dispatch` whose cases guard the exact input types of each
    signature function, most frequently recorded first (ties in signature
    order), and a fallback for inputs that match none:
    - `generic` (default): `@forward_generic`, a copy of the signature
      function with the largest inputs whose tensor types have `?` sizes
      (packed saves become plain ones there: packing needs static shapes),
      marked `memopt.generic_of = @forward_s<i>` (whose plan it carries).
      When that function folded control flow on tensor sizes
      (`memopt.shape_assumes`) a copy would be wrong for other shapes: the
      pass warns and uses `original`;
    - `original`: a private declaration `@forward_original` with
      `memopt.original_method = "forward"`: the source module's unmodified
      forward;
    - `none`: no fallback, the dispatch is `strict` (a miss raises).
    The exporter turns the result into one TorchScript module with a method
    per function (docs/specialization.md).
  }];
  let options = [
    Option<"method", "method", "std::string", /*default=*/"\"forward\"",
           "The method whose signature functions (<method>_s<N>) to dispatch">,
    Option<"fallback", "fallback", "std::string", /*default=*/"\"generic\"",
           "What runs an unseen signature: generic, original or none">,
  ];
  let dependentDialects = ["::mlir::memopt::MemoptDialect",
                           "::mlir::func::FuncDialect"];
}

def FunctionalizeLists : Pass<"memopt-functionalize-lists", "::mlir::func::FuncOp"> {
  let summary = "Rebuild append-only lists as one ListConstruct and resolve its constant reads";
  let description = [{
    A list created empty, filled only by `aten::append` (whose results are
    unused) and read only after its last append is replaced by a single
    `prim::ListConstruct` of the appended values placed before its first
    reader. This is what an unrolled `spikes.append(s)` loop followed by
    `torch.stack(spikes)` becomes: the analyses then see through the list
    and the planner may cut between time steps. Lists read between appends,
    written by other ops or used in nested regions are left alone.

    Then every `aten::__getitem__` of a list that is a `prim::ListConstruct`
    no op writes, at an index computed from constants and list lengths
    (`aten::len`, int `add` / `sub` / `mul`: `skips[len(skips) - 1 - i]` in
    an unrolled U-Net decoder), is replaced by the element itself, and the
    list and index arithmetic nothing reads any more are erased. Without
    this, a checkpoint region that reads one skip connection through the
    list takes every element as an input and keeps it for its backward.
  }];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

def SplitRecurrentLayers : Pass<"memopt-split-recurrent-layers", "::mlir::func::FuncOp"> {
  let summary = "Write a multi-layer recurrent call as one call per layer";
  let description = [{
    An `aten::lstm` / `gru` / `rnn_tanh` / `rnn_relu` call with
    `num_layers` > 1 becomes one call per layer, in order: each takes the
    layer's slice of the initial states (`aten::slice` along dim 0) and of
    the parameter list, runs time-major (a batch-first input is transposed
    once before the first layer and the output once after the last, as
    ATen does), and feeds the next through `aten::dropout` when the stack
    has dropout and trains. The final states are the layers' concatenated.
    ATen runs the layers exactly this way, so values and gradients are the
    same bit for bit; the planner can then recompute, or free, one layer at
    a time. Stacks with projections (`proj_size`), lists not built in the
    function or non-constant flags are left alone. memopt-compile runs it
    right after import, before the kernel probe measures each call, for CPU
    plans only: on CUDA, cuDNN runs a whole stack and draws its dropout
    from its own generator, which one-layer calls would not reproduce.
  }];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

def ApplyKernelMarks : Pass<"memopt-apply-kernel-marks", "::mlir::ModuleOp"> {
  let summary = "Price convolutions from kernel marks measured on the GPU";
  let description = [{
    Sets the `high_water` of every convolution whose call (static shapes,
    constant arguments, and the gradients training asks of it) the marks
    file has, as `memopt-compile --kernel-marks` does: the file is what
    `bench/cuda_kernel_probe.py` (or `memopt.wrap`) measured on the GPU,
    one device's lines in the kernel probe's format. With `requests`, the
    calls the file lacks are appended there as JSON lines. For predicting
    a plan already made (its IR, `memopt-compile --emit-mlir`) with marks
    measured later: `memopt-opt plan.mlir
    --memopt-apply-kernel-marks="file=M" --memopt-test-memory-model`. A
    file of another device or of several, a damaged line or a missing file
    is an error at the module.
  }];
  let options = [
    Option<"file", "file", "std::string", "\"\"",
           "The marks file (one device's lines)">,
    Option<"device", "device", "std::string", "\"cuda\"",
           "The device every line's context must name">,
    Option<"requests", "requests", "std::string", "\"\"",
           "Append the calls the file lacks here (JSON lines)">,
  ];
}

def ChunkWeightGradients : Pass<"memopt-chunk-weight-gradients", "::mlir::func::FuncOp"> {
  let summary = "Write large linear weight gradients straight into `.grad`";
  let description = [{
    When `.grad` stays allocated between steps (`memopt.grad_buffers =
    "resident"` on the module or function: `zero_grad(set_to_none=False)`,
    PyTorch 1.x's default, or gradient accumulation), autograd computes a
    linear layer's weight gradient as a new weight-sized tensor and adds it
    into `.grad` afterwards. Every `aten::linear` outside checkpoint regions
    whose weight is a trainable parameter used by no other op (or by one
    other op that is not a linear layer: an LM head tied to its token
    embedding), with static
    shapes, and whose gradient is larger than four blocks of about 4 MiB of
    rows (include/memopt/Runtime/WeightGradChunks.h) gets
    `backward = #memopt.backward<weight_rows>`: where `.grad` holds +0
    (zero_grad), the runtime (`memopt::linear_weight_rows`) writes the
    product eager computes straight into it and adds +0, which gives eager's
    `+0 + p` bit for bit whatever the BLAS, with no weight-sized temporary.
    Where the runtime finds `.grad` not allocated or not all +0 (gradient
    accumulation), hooks on the weight, or another holder of its
    accumulator (DDP), it returns the whole gradient as eager does. Of a
    tied weight autograd would hold the head's whole gradient until the
    embedding's backward, then add their sum into `.grad`; the head's
    written into a `.grad` of +0 and the embedding's added after give
    (0 + a) + b, the bits of 0 + (a + b). (The gradient was once added a
    block of output rows at a time, hence the mark's name: with an
    optimized BLAS a block's product is summed in another order than the
    whole product's, so only the reference BLAS gave eager's bits.)
    `memopt-insert-checkpoints` removes the
    mark again when its plan's peak holds without it, and from linear
    layers it moves into a region. memopt-compile runs it for CPU plans
    only.
  }];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

#endif // MEMOPT_TRANSFORMS_PASSES_TD
