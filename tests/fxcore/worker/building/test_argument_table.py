"""The pure parts of ``fxcore.worker.building.arguments``: the name table and reading a forwarded
``TypeError``."""

from __future__ import annotations

import inspect

import pytest

from fxcore.worker.building.arguments import guess_value, missing_from_type_error, value_source


@pytest.mark.parametrize(
    ("name", "annotation", "expected"),
    [
        ("in_channels", None, 3),
        ("in_chans", int, 3),
        ("out_channels", None, 16),
        ("dim", None, 64),
        ("hidden_size", int, 64),
        ("mlp_dim", None, 64),
        ("depth", None, 2),
        ("num_layers", None, 2),
        ("heads", None, 4),
        ("n_head", None, 4),
        ("dim_head", None, 16),
        ("spatial_dims", None, 2),
        ("num_classes", None, 10),
        ("image_size", None, 32),
        ("patch_size", None, 8),
        ("image_patch_size", None, 8),
        ("frame_patch_size", None, 8),
        ("frames", None, 16),
        ("num_frames", int, 16),
        ("sequence_length", None, 16),
        ("kernel_size", None, 3),
        # Not a size of 64 (``*_size``): MONAI's up-sampling stride is its kernel size.
        ("upsample_kernel_size", None, 3),
        ("dropout", float, 0.0),
        ("eps", None, 1e-5),
        ("depths", None, (1, 1)),
        ("dim_mults", None, (1, 2)),
        ("use_bias", None, False),
        ("num_whatever", None, 2),
        ("name", str, inspect.Parameter.empty),
    ],
)
def test_name_table(name: str, annotation: object, expected: object) -> None:
    assert guess_value(name, annotation) == expected


def test_a_wrapped_module_parameter_gets_identity() -> None:
    value = guess_value("fn", None)
    assert type(value).__name__ == "Identity"
    assert value_source(value) == "__import__('torch').nn.Identity()"


def test_missing_arguments_read_from_a_base_class_type_error() -> None:
    def base(dim: int, heads: int) -> None: ...

    with pytest.raises(TypeError) as raised:
        base()  # type: ignore[call-arg]
    assert missing_from_type_error(raised.value) == ["dim", "heads"]
    assert missing_from_type_error(TypeError("unsupported operand")) == []
    assert missing_from_type_error(ValueError("missing 1 required positional argument: 'x'")) \
        == []


def test_values_round_trip_as_source() -> None:
    for value in (3, 0.5, (1, 2), (4,), [1, 2], None, True):
        assert eval(value_source(value)) == value
