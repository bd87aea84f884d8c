"""The exported module carries the source's state exactly (issue 3).

state_dict() keys (in order) and values, requires_grad flags and training
flags are the original ones; model and optimizer state dicts move between
the eager model and the compiled one in both directions; forward refuses to
run when a module attribute the import folded control flow on changed.
"""
import pathlib

import pytest
import torch

import models
from test_roundtrip import translate

torch._C._set_graph_executor_optimize(False)


def export(source: pathlib.Path, specs, directory: pathlib.Path) -> torch.jit.ScriptModule:
    mlir = directory / (source.stem + ".mlir")
    exported = directory / (source.stem + ".out.pt")
    translate("--import-torchscript", source,
              *[f"--input-shape={s}" for s in specs], "-o", mlir)
    translate("--export-torchscript", mlir, "-o", exported)
    return torch.jit.load(str(exported))


def roundtrip_case(name: str, directory: pathlib.Path):
    """(eager model, original TorchScript module, exported module)."""
    case = models.CASES[name]
    source = directory / f"{name}.pt"
    eager = case.save(source)
    return eager, torch.jit.load(str(source)), export(source, case.input_specs(), directory)


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    return roundtrip_case("resnet18", tmp_path_factory.mktemp("resnet"))


@pytest.mark.parametrize("name", ["resnet18", "spiking", "traced_cnn", "fx_cnn"])
def test_state_dict_is_the_original(name, tmp_path):
    _, original, exported = roundtrip_case(name, tmp_path)
    want, got = original.state_dict(), exported.state_dict()
    assert list(got) == list(want)
    for key in want:
        assert got[key].dtype == want[key].dtype, key
        assert torch.equal(got[key], want[key]), key
    assert [n for n, _ in exported.named_buffers()] == \
        [n for n, _ in original.named_buffers()]


def test_requires_grad_flags_survive(tmp_path):
    case = models.CASES["resnet18"]
    model = case.make()
    for p in list(model.conv1.parameters()) + list(model.layer1.parameters()):
        p.requires_grad_(False)
    model.fc.bias.requires_grad_(False)
    source = tmp_path / "frozen.pt"
    torch.jit.script(model).save(str(source))
    exported = export(source, case.input_specs(), tmp_path)

    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    assert {n: p.requires_grad for n, p in exported.named_parameters()} == flags
    exported(*case.example_inputs()).sum().backward()
    for name, p in exported.named_parameters():
        assert (p.grad is not None) == flags[name], name


def training_flags(module):
    return {name: m.training for name, m in module.named_modules()}


def test_training_flags_survive_and_switch(tmp_path):
    case = models.CASES["resnet18"]
    model = case.make()
    model.layer2.eval()   # a mixed configuration
    source = tmp_path / "mixed.pt"
    torch.jit.script(model).save(str(source))
    exported = export(source, case.input_specs(), tmp_path)
    assert training_flags(exported) == training_flags(model)

    exported.eval()
    assert not any(training_flags(exported).values())
    exported.train()
    assert all(training_flags(exported).values())
    # The import folded batch-norm control flow on these flags: forward says
    # so instead of computing something else.
    with pytest.raises(torch.jit.Error, match="compiled for layer2"):
        exported(*case.example_inputs())
    exported.layer2.eval()
    exported(*case.example_inputs())


def test_eval_mode_model_matches(tmp_path):
    case = models.CASES["mobilenet_v2"]
    model = case.make().eval()
    source = tmp_path / "eval.pt"
    torch.jit.script(model).save(str(source))
    exported = export(source, case.input_specs(), tmp_path)
    assert not any(training_flags(exported).values())
    with torch.no_grad():
        x = case.example_inputs()
        assert torch.equal(exported(*x), model(*x))


def test_state_dicts_move_both_ways(resnet, tmp_path):
    eager, _, exported = resnet
    exported.load_state_dict(eager.state_dict())
    eager.load_state_dict(exported.state_dict())
    checkpoint = tmp_path / "ckpt.pth"
    torch.save(exported.state_dict(), checkpoint)
    fresh = models.CASES["resnet18"].make(seed=5)
    fresh.load_state_dict(torch.load(checkpoint))
    for key, value in fresh.state_dict().items():
        assert torch.equal(value, exported.state_dict()[key]), key


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_optimizer_state_moves_both_ways(resnet, optimizer):
    eager, _, exported = resnet
    make = {"sgd": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9),
            "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3)}[optimizer]
    x = models.CASES["resnet18"].example_inputs()

    eager_opt = make(eager.parameters())
    eager(*x).sum().backward()
    eager_opt.step()
    compiled_opt = make(exported.parameters())
    compiled_opt.load_state_dict(eager_opt.state_dict())
    eager_params = list(eager.parameters())
    for i, p in enumerate(exported.parameters()):
        for key, value in eager_opt.state[eager_params[i]].items():
            assert torch.equal(compiled_opt.state[p][key], value), (i, key)

    back = make(eager.parameters())
    back.load_state_dict(compiled_opt.state_dict())
    assert back.state_dict()["state"].keys() == eager_opt.state_dict()["state"].keys()


class Stateful(torch.nn.Module):
    """Assigns a counter and a tensor state in forward (prim::SetAttr)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.calls = 0
        self.v = torch.zeros(2, 4)

    def forward(self, x):
        self.calls += 1
        v = self.v * 0.5 + self.lin(x)
        self.v = v.detach()
        return v


def test_attributes_assigned_in_forward(tmp_path):
    source = tmp_path / "stateful.pt"
    torch.jit.script(Stateful()).save(str(source))
    original = torch.jit.load(str(source))
    exported = export(source, ["x:2x4"], tmp_path)
    x = torch.randn(2, 4)
    for step in range(1, 3):
        assert torch.equal(exported(x), original(x))
        assert exported.calls == original.calls == step
        assert torch.equal(exported.v, original.v)
