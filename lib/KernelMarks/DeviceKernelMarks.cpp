//===- DeviceKernelMarks.cpp - kernel marks measured on another device ----===//
//
// Which buffers a GPU convolution allocates depends on the algorithm cuDNN
// picks on that device, so no formula here can price it and this machine
// cannot run it. The device's own probe (bench/cuda_kernel_probe.py) runs
// each call there and writes a marks file in the CPU probe's line format;
// this file puts those marks on the IR, and lists the calls the file lacks
// so that the next run on the device measures them.
//
//===----------------------------------------------------------------------===//
#include "ConvolutionCallFromIR.h"
#include "MarksLine.h"

#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Probe/DeviceKernelMarks.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::memopt;
using ::memopt::probe::ConvolutionCall;
using ::memopt::probe::ConvolutionForm;
using ::memopt::probe::ElementKind;
using ::memopt::probe::KernelMarks;

namespace {
/// A call the marks file lacks, and what of it the model needs.
struct Request {
  ConvolutionCall call;
  std::string op;
  bool forward = false;
  std::set<unsigned> masks;
};
} // namespace

/// Reads every line of `path` (one device's marks) into `marks`.
static LogicalResult readMarksFile(const std::string &path,
                                   const std::string &device,
                                   llvm::StringMap<KernelMarks> &marks,
                                   std::string &context, std::string &error) {
  std::ifstream file(path);
  if (!file) {
    error = "cannot read the kernel marks file '" + path + "'";
    return failure();
  }
  std::string line, lineContext, key;
  for (unsigned number = 1; std::getline(file, line); ++number) {
    if (line.empty() || line[0] == '#')
      continue;
    KernelMarks read;
    if (!::memopt::probe::parseMarksLine(line, lineContext, key, read)) {
      error = "line " + std::to_string(number) + " of '" + path +
              "' is not a kernel marks line (context, call and marks, "
              "separated by tabs)";
      return failure();
    }
    if (context.empty())
      context = lineContext;
    if (lineContext != context) {
      error = "'" + path + "' holds marks of more than one device ('" +
              context + "' and '" + lineContext +
              "'); keep the lines of the device that will train";
      return failure();
    }
    marks[key].fillFrom(read);
  }
  if (context.empty()) {
    error = "the kernel marks file '" + path + "' holds no marks";
    return failure();
  }
  if (context.rfind(device + " ", 0) != 0) {
    error = "'" + path + "' holds marks measured on '" + context +
            "', not on a " + device + " device";
    return failure();
  }
  return success();
}

static const char *getFormName(ConvolutionForm form) {
  switch (form) {
  case ConvolutionForm::Convolution:
    return "convolution";
  case ConvolutionForm::TransposedConvolution:
    return "transposed";
  case ConvolutionForm::General:
    return "general";
  }
  return "convolution";
}

static const char *getDtypeName(ElementKind element) {
  switch (element) {
  case ElementKind::F32:
    return "float32";
  case ElementKind::F64:
    return "float64";
  case ElementKind::F16:
    return "float16";
  case ElementKind::BF16:
    return "bfloat16";
  }
  return "float32";
}

/// One request as a JSON object: everything the device's probe needs to
/// run the call as the model does, and the key to write its marks under.
static llvm::json::Object toJSON(const std::string &key, const Request &r) {
  auto ints = [](const std::vector<int64_t> &values) {
    return llvm::json::Array(values);
  };
  const ConvolutionCall &c = r.call;
  llvm::json::Array masks;
  for (unsigned mask : r.masks)
    masks.push_back(int64_t(mask));
  return llvm::json::Object{{"kind", "convolution"},
                            {"key", key},
                            {"op", r.op},
                            {"form", getFormName(c.form)},
                            {"dtype", getDtypeName(c.element)},
                            {"input", ints(c.input)},
                            {"weight", ints(c.weight)},
                            {"bias", c.bias},
                            {"stride", ints(c.stride)},
                            {"padding", ints(c.padding)},
                            {"padding_mode", c.paddingMode},
                            {"dilation", ints(c.dilation)},
                            {"output_padding", ints(c.outputPadding)},
                            {"transposed", c.transposed},
                            {"groups", c.groups},
                            {"channels_last", c.channelsLastInput},
                            {"forward", r.forward},
                            {"masks", std::move(masks)}};
}

static LogicalResult
writeRequests(const std::string &path,
              const std::map<std::string, Request> &requests,
              std::string &error) {
  std::error_code ec;
  // Appended: one file gathers the calls of several compiles.
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Append);
  if (ec) {
    error =
        "cannot write the kernel requests file '" + path + "': " + ec.message();
    return failure();
  }
  for (const auto &[key, request] : requests)
    os << llvm::json::Value(toJSON(key, request)) << '\n';
  os.close();
  if (os.has_error()) {
    error = "cannot write the kernel requests file '" + path +
            "': " + os.error().message();
    os.clear_error();
    return failure();
  }
  return success();
}

FailureOr<DeviceKernelMarksSummary>
mlir::memopt::applyDeviceKernelMarks(ModuleOp module,
                                     const DeviceKernelMarksOptions &options,
                                     std::string &error) {
  DeviceKernelMarksSummary summary;
  llvm::StringMap<KernelMarks> marks;
  if (!options.marksPath.empty() &&
      failed(readMarksFile(options.marksPath, options.device, marks,
                           summary.context, error)))
    return failure();

  DenseSet<Value> grads = getGradValues(module);
  std::map<std::string, Request> requests;
  module.walk([&](TorchOp op) {
    if (!isConvolutionOperator(op.getName()))
      return;
    // A GPU has no intra-op threads: 0 in the key.
    std::optional<ConvolutionCall> call = getConvolutionCall(op, 0);
    if (!call) {
      ++summary.skipped;
      return;
    }
    unsigned mask = getConvolutionGradientMask(op, grads);
    std::string key = call->key();
    KernelMarks known = marks.lookup(key);
    bool needsForward = known.forward < 0;
    bool needsBackward = mask && known.backward[mask] < 0;
    if (known.forward >= 0 || (mask && known.backward[mask] >= 0))
      op.setHighWaterAttr(KernelHighWaterAttr::get(
          op.getContext(), known.forward, known.backward));
    if (!needsForward && !needsBackward) {
      ++summary.applied;
      return;
    }
    Request &request = requests[key];
    request.call = *call;
    request.op = op.getName().str();
    request.forward |= needsForward;
    if (needsBackward)
      request.masks.insert(mask);
  });
  summary.requested = requests.size();
  if (!options.requestsPath.empty() && !requests.empty() &&
      failed(writeRequests(options.requestsPath, requests, error)))
    return failure();
  return summary;
}
