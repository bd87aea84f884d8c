//===- OpSchemas.h - the runtime ops compiled modules call ------*- C++ -*-===//
//
// Part of the compiler/runtime contract (plain C++: no torch, no MLIR). The
// schema of every runtime op the exporter emits, written once: the runtime
// registers these texts (TORCH_LIBRARY_FRAGMENT(memopt)), and the exporter
// declares the same texts while it saves a module without the runtime
// loaded, and checks a loaded runtime against them.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_OPSCHEMAS_H
#define MEMOPT_RUNTIME_OPSCHEMAS_H

namespace memopt::schemas {

inline constexpr char kCheckpointTyped[] =
    "memopt::checkpoint.typed(str graph, Tensor[] inputs, int[] ints, "
    "float[] floats, str[] policies, str name) -> Tensor[]";
inline constexpr char kConvPacked[] =
    "memopt::conv_packed(Tensor input, Tensor weight, Tensor? bias, "
    "int[] stride, int[] padding, int[] dilation, int groups, str kind) "
    "-> Tensor";
inline constexpr char kLinearPacked[] =
    "memopt::linear_packed(Tensor input, Tensor weight, Tensor? bias, "
    "str kind) -> Tensor";
inline constexpr char kMulPacked[] =
    "memopt::mul_packed(Tensor binary, Tensor other, str kind) -> Tensor";
inline constexpr char kReluMasked[] =
    "memopt::relu_masked(Tensor self) -> Tensor";
inline constexpr char kReluMaskedInplace[] =
    "memopt::relu_masked_(Tensor(a!) self) -> Tensor(a!)";
inline constexpr char kDropoutMasked[] =
    "memopt::dropout_masked(Tensor input, float p, bool train) -> Tensor";
inline constexpr char kMaxPool2dLean[] =
    "memopt::max_pool2d_lean(Tensor self, int[] kernel_size, int[] stride, "
    "int[] padding, int[] dilation, bool ceil_mode) -> Tensor";
inline constexpr char kBatchNormByChannel[] =
    "memopt::batch_norm_by_channel(Tensor input, Tensor? weight, "
    "Tensor? bias, Tensor(a!)? running_mean, Tensor(b!)? running_var, "
    "bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor";
inline constexpr char kLinearWeightRows[] =
    "memopt::linear_weight_rows(Tensor input, Tensor weight, Tensor? bias, "
    "str saved_input) -> Tensor";

/// How TorchScript's alias analysis treats an op: as its schema says
/// (relu_masked_ writes its input), or conservatively for dropout_masked,
/// which draws random numbers, so that TorchScript neither merges nor drops
/// its calls.
enum class Aliasing { FromSchema, Conservative };

struct ExportedOp {
  const char *schema;
  Aliasing aliasing;
};

/// Every op the exporter emits, with its alias analysis.
inline constexpr ExportedOp kExportedOps[] = {
    {kCheckpointTyped, Aliasing::FromSchema},
    {kConvPacked, Aliasing::FromSchema},
    {kLinearPacked, Aliasing::FromSchema},
    {kMulPacked, Aliasing::FromSchema},
    {kReluMasked, Aliasing::FromSchema},
    {kReluMaskedInplace, Aliasing::FromSchema},
    {kMaxPool2dLean, Aliasing::FromSchema},
    {kBatchNormByChannel, Aliasing::FromSchema},
    {kLinearWeightRows, Aliasing::FromSchema},
    {kDropoutMasked, Aliasing::Conservative}};

} // namespace memopt::schemas

#endif // MEMOPT_RUNTIME_OPSCHEMAS_H
