//===- CompileOptions.cpp - validate memopt-compile's options -------------===//
#include "memopt/Compile/CompileOptions.h"
#include "memopt/Config/TorchVersion.h"
#include "memopt/Support/QuotedText.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::memopt;

LogicalResult mlir::memopt::checkWritable(llvm::StringRef path,
                                          std::string &error) {
  namespace fs = llvm::sys::fs;
  if (path == "-")
    return success();
  auto fail = [&](const llvm::Twine &why) {
    error = ("cannot write " + quoted(path) + ": " + why).str();
    return failure();
  };
  if (path.empty())
    return fail("the path is empty");
  if (fs::is_directory(path))
    return fail("it is a directory");
  if (fs::exists(path)) {
    if (std::error_code ec = fs::access(path, fs::AccessMode::Write))
      return fail(ec.message());
    return success();
  }
  llvm::StringRef parent = llvm::sys::path::parent_path(path);
  if (parent.empty())
    parent = ".";
  if (!fs::exists(parent))
    return fail("directory " + quoted(parent) + " does not exist");
  if (!fs::is_directory(parent))
    return fail(quoted(parent) + " is not a directory");
  if (std::error_code ec = fs::access(parent, fs::AccessMode::Write))
    return fail("directory " + quoted(parent) + ": " + ec.message());
  return success();
}

LogicalResult
mlir::memopt::validateCompileOptions(const CompileOptions &options,
                                     std::string &error) {
  if (options.inputPath.empty()) {
    error = "no input model (usage: memopt-compile model.pt -o "
            "model.memopt.pt --input-shape x:8x3x224x224)";
    return failure();
  }
  {
    int fd;
    std::error_code ec =
        llvm::sys::fs::openFileForRead(options.inputPath, fd);
    if (!ec) {
      llvm::sys::Process::SafelyCloseFileDescriptor(fd);
      if (llvm::sys::fs::is_directory(options.inputPath))
        ec = std::make_error_code(std::errc::is_a_directory);
    }
    if (ec) {
      error = "cannot open " + quoted(options.inputPath) + ": " + ec.message();
      return failure();
    }
  }
  if (options.worldSize < 1 || options.worldSize > kMaxWorldSize) {
    error = "--world-size must be between 1 and " +
            std::to_string(kMaxWorldSize) + ", got " +
            std::to_string(options.worldSize);
    return failure();
  }
  if (options.gradBuffers != "auto" &&
      !parseGradBuffers(options.gradBuffers)) {
    error = "unknown --grad-buffers " + quoted(options.gradBuffers) +
            " (expected auto, resident or allocated)";
    return failure();
  }
  if (!llvm::is_contained({"auto", "probe", "model"},
                          options.kernelWorkspaces)) {
    error = "unknown --kernel-workspaces " + quoted(options.kernelWorkspaces) +
            " (expected auto, probe or model)";
    return failure();
  }
  if (options.kernelWorkspaces == "probe" &&
      options.planning.device != TrainingDevice::CPU) {
    error = "--kernel-workspaces=probe measures this machine's CPU kernels; "
            "it cannot stand for --device " +
            stringifyTrainingDevice(options.planning.device).str();
    return failure();
  }
  for (auto [flag, path] :
       {std::pair{"--kernel-marks", &options.kernelMarksPath},
        {"--kernel-requests", &options.kernelRequestsPath}})
    if (!path->empty() && options.planning.device == TrainingDevice::CPU) {
      error = std::string(flag) +
              " is for a GPU's kernels (--device cuda); for --device cpu "
              "the kernel probe measures this machine's";
      return failure();
    }
  if (options.threads != "auto") {
    int64_t count = 0;
    if (StringRef(options.threads).getAsInteger(10, count) || count < 1 ||
        count > kMaxIntraOpThreads) {
      error = "--intra-op-threads must be auto or a count between 1 and " +
              std::to_string(kMaxIntraOpThreads) + ", got " +
              quoted(options.threads);
      return failure();
    }
  }
  if (!llvm::is_contained({"generic", "original"}, options.fallback)) {
    error = "unknown --fallback " + quoted(options.fallback) +
            " (expected generic or original)";
    return failure();
  }
  for (const std::string &text : options.inputShapes)
    if (failed(parseInputSpec(text, error)))
      return failure();
  for (const auto *list : {&options.specs, &options.passthroughSpecs})
    for (const std::string &text : *list)
      if (failed(parseSignatureSpec(text, error)))
        return failure();

  if (!options.passPipeline.empty() && options.analyzeOnly) {
    error = "--pass-pipeline runs passes; it cannot be combined with "
            "--analyze-only";
    return failure();
  }
  if (options.outputPath.empty() && options.reportPath.empty() &&
      options.emitMlirPath.empty() && options.emitStubsDir.empty() &&
      !options.analyzeOnly) {
    error = "no output file: give -o model.memopt.pt (or --report / "
            "--emit-mlir to plan without writing a model, or --analyze-only "
            "to only predict memory)";
    return failure();
  }
  for (const std::string *path :
       {&options.outputPath, &options.reportPath, &options.emitMlirPath}) {
    if (path->empty())
      continue;
    if (failed(checkWritable(*path, error)))
      return failure();
  }
  if (!options.emitStubsDir.empty()) {
    if (options.analyzeOnly) {
      error = "--emit-stubs writes the launchers of a plan; it cannot be "
              "combined with --analyze-only";
      return failure();
    }
    if (options.inputShapes.empty() && options.specs.empty()) {
      error = "--emit-stubs needs static sizes: give --input-shape or --spec "
              "(launch stubs fix every size at compile time)";
      return failure();
    }
    // The folder, or the nearest existing folder above it (the missing
    // ones are made), must take a new file.
    llvm::SmallString<256> existing(options.emitStubsDir);
    while (!existing.empty() && !llvm::sys::fs::exists(existing))
      llvm::sys::path::remove_filename(existing);
    if (existing.empty())
      existing = ".";
    if (!llvm::sys::fs::is_directory(existing)) {
      error = "cannot write launch stubs into " + quoted(options.emitStubsDir) +
              ": " + quoted(existing) + " is not a directory";
      return failure();
    }
    if (failed(checkWritable((existing + "/stubs.cpp").str(), error)))
      return failure();
  }
  int toStdout = llvm::count_if(
      std::initializer_list<const std::string *>{
          &options.outputPath, &options.reportPath, &options.emitMlirPath},
      [](const std::string *path) { return *path == "-"; });
  if (toStdout > 1) {
    error = "only one of -o, --report and --emit-mlir may write to stdout "
            "('-')";
    return failure();
  }
  return success();
}

llvm::FailureOr<std::vector<InputSignature>>
mlir::memopt::collectSignatures(const CompileOptions &options,
                                std::string &error) {
  std::vector<InputSignature> signatures;
  if (!options.inputShapes.empty()) {
    InputSignature signature;
    for (const std::string &text : options.inputShapes) {
      FailureOr<InputSpec> spec = parseInputSpec(text, error);
      if (failed(spec))
        return failure();
      signature.inputs.push_back(std::move(*spec));
    }
    signatures.push_back(std::move(signature));
  }
  for (const std::string &text : options.specs) {
    FailureOr<InputSignature> signature = parseSignatureSpec(text, error);
    if (failed(signature))
      return failure();
    signatures.push_back(std::move(*signature));
  }
  for (const std::string &text : options.passthroughSpecs) {
    FailureOr<InputSignature> signature = parseSignatureSpec(text, error);
    if (failed(signature))
      return failure();
    signature->passthrough = true;
    signatures.push_back(std::move(*signature));
  }
  if (!options.signaturesFile.empty()) {
    FailureOr<std::vector<InputSignature>> recorded =
        readSignatureFile(options.signaturesFile, error);
    if (failed(recorded))
      return failure();
    if (recorded->empty()) {
      error = quoted(options.signaturesFile) + " records no signature";
      return failure();
    }
    for (InputSignature &signature : *recorded)
      signatures.push_back(std::move(signature));
  }
  // The same shapes twice would give two identical dispatch cases.
  for (size_t i = 0; i < signatures.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (signatures[i].inputs == signatures[j].inputs) {
        error = "signature " + quoted(formatSignature(signatures[i].inputs)) +
                " is given twice";
        return failure();
      }
  return signatures;
}

GradBuffers mlir::memopt::resolveGradBuffers(const CompileOptions &options) {
  if (std::optional<GradBuffers> mode = parseGradBuffers(options.gradBuffers))
    return *mode;
  // zero_grad() sets .grad to None by default since PyTorch 2.0.
  return MEMOPT_TORCH_VERSION_MAJOR >= 2 ? GradBuffers::Allocated
                                         : GradBuffers::Resident;
}

int mlir::memopt::resolveIntraOpThreads(const CompileOptions &options,
                                        int defaultThreads) {
  int64_t count = 0;
  if (options.threads == "auto" ||
      StringRef(options.threads).getAsInteger(10, count))
    return std::max(defaultThreads, 1);
  return static_cast<int>(count);
}

bool mlir::memopt::shouldProbeKernels(const CompileOptions &options) {
  // The probe measures this process's CPU kernels: they stand for training
  // on the CPU only.
  return options.kernelWorkspaces == "probe" ||
         (options.kernelWorkspaces == "auto" &&
          options.planning.device == TrainingDevice::CPU);
}

std::string mlir::memopt::buildPipeline(const CompileOptions &options,
                                        bool specialize, bool plan) {
  if (!specialize && !plan)
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "builtin.module(";
  // Plan each signature's function first: the generic fallback is a copy of
  // a planned one, and the planner leaves planned functions alone.
  if (plan) {
    os << kPlanningPipelineName << "{"
       << printPassOptions(options.planning, /*withCompress=*/true) << "}";
    if (specialize)
      os << ",";
  }
  if (specialize)
    os << kSpecializePassName << "{fallback="
       << (options.strictSignatures ? "none" : options.fallback) << "}";
  os << ")";
  return text;
}

std::string mlir::memopt::joinCommandLine(int argc, char **argv) {
  std::string text;
  for (int i = 0; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (i)
      text += ' ';
    bool plain = !arg.empty() && llvm::all_of(arg, [](char c) {
      return llvm::isAlnum(c) || llvm::StringRef("-_=.,:/%+@").contains(c);
    });
    if (plain) {
      text += arg.str();
      continue;
    }
    text += '\'';
    for (char c : arg) {
      if (c == '\'')
        text += "'\\''";
      else
        text += c;
    }
    text += '\'';
  }
  return text;
}
