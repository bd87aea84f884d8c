"""python/memopt/recorder.py: counting the input signatures of a few training
iterations, and the signature file memopt-translate --signatures-file reads."""
import json
import subprocess

import pytest
import torch
from torch import nn

from conftest import tool_path
from memopt.recorder import InputShape, Signature, SignatureRecorder


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, features, mask=None, scale: float = 1.0):
        y = self.fc(features) * scale
        if mask is not None:
            y = y * mask
        return y


def train_step(model, *inputs, **kwargs):
    model.zero_grad()
    model(*inputs, **kwargs).sum().backward()


def test_counts_distinct_signatures_sorted_by_count():
    model = TwoInputs()
    with SignatureRecorder(model) as recorder:
        for batch in [8, 8, 3, 8, 3, 5]:
            train_step(model, torch.randn(batch, 4))
    assert recorder.signatures() == [
        Signature((InputShape("features", (8, 4), "f32"),), 3),
        Signature((InputShape("features", (3, 4), "f32"),), 2),
        Signature((InputShape("features", (5, 4), "f32"),), 1),
    ]


def test_ties_keep_first_seen_order_and_names_follow_forward():
    model = TwoInputs()
    with SignatureRecorder(model) as recorder:
        train_step(model, torch.randn(2, 4), torch.ones(2, 2, dtype=torch.bool))
        train_step(model, torch.randn(6, 4, dtype=torch.float64).float(),
                   torch.ones(6, 2))
        train_step(model, torch.randn(2, 4), torch.ones(2, 2, dtype=torch.bool),
                   0.5)  # a float input is not part of the signature
    first, second = recorder.signatures()
    assert first.count == 2 and second.count == 1
    assert first.inputs == (InputShape("features", (2, 4), "f32"),
                            InputShape("mask", (2, 2), "i1"))
    assert second.inputs[1] == InputShape("mask", (6, 2), "f32")
    assert first.spec() == "features:2x4:f32,mask:2x2:i1;count=2"


def test_dtype_names_are_memopt_specs():
    model = nn.Identity()
    with SignatureRecorder(model) as recorder:
        for dtype in [torch.float32, torch.float16, torch.bfloat16, torch.float64,
                      torch.int64, torch.int32, torch.bool]:
            model(torch.zeros(2, dtype=dtype))
    assert [s.inputs[0].dtype for s in recorder.signatures()] == [
        "f32", "f16", "bf16", "f64", "i64", "i32", "i1"]


def test_only_active_inside_the_context():
    model = TwoInputs()
    recorder = SignatureRecorder(model)
    train_step(model, torch.randn(2, 4))
    with recorder:
        train_step(model, torch.randn(3, 4))
    train_step(model, torch.randn(4, 4))
    assert [s.inputs[0].shape for s in recorder.signatures()] == [(3, 4)]
    assert not model._forward_pre_hooks
    # Recording again accumulates.
    with recorder:
        train_step(model, torch.randn(3, 4))
    assert recorder.signatures()[0].count == 2


def test_keyword_inputs_on_pytorch_2():
    model = TwoInputs()
    with SignatureRecorder(model) as recorder:
        model(torch.randn(2, 4), mask=torch.ones(2, 2))
    (signature,) = recorder.signatures()
    names = [i.name for i in signature.inputs]
    if int(torch.__version__.split(".")[0]) >= 2:
        assert names == ["features", "mask"]
    else:  # 1.x pre-hooks do not see keyword arguments
        assert names == ["features"]


def test_save_writes_the_signature_file(tmp_path):
    model = TwoInputs()
    with SignatureRecorder(model) as recorder:
        for batch in [4, 4, 2]:
            train_step(model, torch.randn(batch, 4))
    path = tmp_path / "signatures.json"
    recorder.save(path)
    assert json.loads(path.read_text()) == {
        "version": 1,
        "signatures": [
            {"inputs": [{"name": "features", "shape": [4, 4], "dtype": "f32"}],
             "count": 2},
            {"inputs": [{"name": "features", "shape": [2, 4], "dtype": "f32"}],
             "count": 1},
        ]}


def test_errors():
    with pytest.raises(TypeError, match="needs a torch.nn.Module"):
        SignatureRecorder(lambda x: x)
    recorder = SignatureRecorder(nn.Identity())
    with pytest.raises(ValueError, match="no signature was recorded"):
        recorder.to_json()
    model = nn.Identity()
    with SignatureRecorder(model) as recorder:
        model(torch.zeros(2, dtype=torch.uint8))
    with pytest.raises(ValueError, match="input 'input' has dtype torch.uint8"):
        recorder.to_json()
    scripted = torch.jit.script(nn.Linear(2, 2))
    with pytest.raises(TypeError, match="cannot hook a ScriptModule"):
        SignatureRecorder(scripted).start()
    # ... but its inputs can be recorded by hand.
    recorder = SignatureRecorder(scripted)
    recorder.record(torch.zeros(3, 2))
    assert recorder.signatures()[0].inputs == (InputShape("input", (3, 2), "f32"),)


def test_memopt_translate_reads_the_file(tmp_path):
    translate = tool_path("memopt-translate")
    if not translate.exists():
        pytest.skip("memopt-translate is not built")
    model = nn.Sequential(nn.Linear(4, 2))
    with SignatureRecorder(model) as recorder:
        for batch in [2, 6, 6]:
            train_step(model, torch.randn(batch, 4))
    recorder.save(tmp_path / "signatures.json")
    torch.jit.script(nn.Sequential(nn.Linear(4, 2))).save(str(tmp_path / "model.pt"))
    result = subprocess.run(
        [str(translate), "--import-torchscript", str(tmp_path / "model.pt"),
         "--signatures-file", str(tmp_path / "signatures.json")],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert ("func.func @forward_s0(%arg0: tensor<6x4xf32>) -> tensor<6x2xf32> "
            "attributes {memopt.signature = #memopt.signature<index = 0, count = 2>}"
            in result.stdout)
    assert "func.func @forward_s1(%arg0: tensor<2x4xf32>)" in result.stdout
