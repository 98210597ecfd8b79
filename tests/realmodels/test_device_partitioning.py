"""Real networks on AOSP's sample drivers: converted torchvision models (float, and quantized
by torch_nnapi.quantize) are partitioned as Android 11 would, by the oracle's account, and
their partitioned plans compute what the whole model computes."""

from __future__ import annotations

from functools import cache

import pytest
import torch

import torch_nnapi
from torch_nnapi.convert import convert_with_details
from torch_nnapi.nnapi import Model

from ..runtime.partition_support import check_against_oracle
from ..runtime.test_partitioned import assert_partitioned_runs_equal
from .torchvision_support import load_torchvision

NETWORKS = ("mobilenet_v2", "squeezenet1_1", "quantized mobilenet_v3_small")


@cache
def nnapi_model(name: str) -> Model:
    """The NNAPI model torch-nnapi converts a small-input torchvision network to."""
    torch.manual_seed(0)
    models = load_torchvision().models
    quantized = name.startswith("quantized ")
    network = models.get_model(name.removeprefix("quantized "), weights=None).eval()
    example = torch.rand(1, 3, 64, 64)
    if quantized:
        network = torch_nnapi.quantize(network, example)
    return convert_with_details(network, example).model


@pytest.mark.parametrize("name", NETWORKS)
def test_networks_partition_as_android(name):
    check_against_oracle(nnapi_model(name), name)


@pytest.mark.parametrize("name", NETWORKS)
def test_partitioned_networks_compute_what_the_whole_model_computes(name):
    several = assert_partitioned_runs_equal(nnapi_model(name), seeds=1)
    assert several > 0  # some plan alternates between devices
