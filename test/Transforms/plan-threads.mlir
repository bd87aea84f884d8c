// The planner judges its candidate plans and nesting tries on the
// context's threads and reads the results back in order: the planned IR
// is the same byte for byte with threading off, for a preference and a
// budget on the pipeline test's functions and for the small spiking VGG
// whose plan nests regions (nested-regions.mlir).
// RUN: memopt-opt %S/pipeline.mlir --memopt-pipeline="prefer=memory" -o %t.parallel
// RUN: memopt-opt %S/pipeline.mlir --memopt-pipeline="prefer=memory" --mlir-disable-threading -o %t.serial
// RUN: diff %t.parallel %t.serial
// RUN: memopt-opt %S/pipeline.mlir --memopt-pipeline="budget=60% device=cuda" -o %t.parallel
// RUN: memopt-opt %S/pipeline.mlir --memopt-pipeline="budget=60% device=cuda" --mlir-disable-threading -o %t.serial
// RUN: diff %t.parallel %t.serial
// RUN: %python -c "import sys; sys.path.insert(0, '%memopt_src/python'); from memopt import measure; print(' '.join('--input-shape ' + s for s in measure.save_zoo_model('spiking_vgg', dict(steps=4, batch=2, size=32), '%t.pt')))" > %t.shape
// RUN: memopt-translate --import-torchscript %t.pt $(cat %t.shape) -o %t.mlir
// RUN: memopt-opt %t.mlir --memopt-pipeline="prefer=memory" -o %t.parallel
// RUN: memopt-opt %t.mlir --memopt-pipeline="prefer=memory" --mlir-disable-threading -o %t.serial
// RUN: diff %t.parallel %t.serial
// RUN: FileCheck %s < %t.parallel
// A region within a region: the nesting tries ran.
// CHECK: memopt.checkpoint
// CHECK: memopt.checkpoint
