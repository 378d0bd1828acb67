"""Device names, and plans refusing arrays of another device (checked before anything is allocated or launched)."""

import numpy as np
import pytest

import gpulab
from gpulab.device import Device, devices
from gpulab.device import device as find_device
from gpulab.errors import DeviceError
from gpulab.primitives.map import MapPlan
from gpulab.runtime.arrays import device_ordinal

H100 = Device("cuda:0", "a compute capability 9.0 GPU (a record: nothing runs here)", (9, 0), 80 * 2**30, 132)
HAS_GPU = any(d.is_gpu for d in devices())


def twice(x: gpulab.f32) -> gpulab.f32:
    return x + x


class OnDevice:
    """A DLPack producer that says it lives on CUDA device ``ordinal`` (only asked where it lives)."""

    def __init__(self, ordinal):
        self.ordinal = ordinal

    def __dlpack_device__(self):
        return (2, self.ordinal)  # kDLCUDA


@pytest.mark.parametrize("name", ["gpu0", "cuda:x", "cuda:-1", "cuda1", ""])
def test_a_malformed_name_says_how_devices_are_named(name):
    with pytest.raises(DeviceError, match=r"'host' or 'cuda:N' \(devices here: host"):
        find_device(name)


@pytest.mark.skipif(HAS_GPU, reason="the message for a machine with no GPU")
def test_a_gpu_on_a_machine_without_one_names_the_host():
    with pytest.raises(DeviceError, match=r"cuda:1 is not available: this machine has no CUDA GPU \(devices: host\)"):
        find_device("cuda:1")


def test_names_are_read_loosely_and_host_is_always_there():
    assert find_device(" HOST ").name == "host"
    assert devices()[0].name == "host"
    assert find_device(H100) is H100


def test_where_an_array_lives():
    assert device_ordinal(OnDevice(3)) == 3

    class Empty:
        __cuda_array_interface__ = {"data": (0, False), "shape": (0,), "typestr": "<f4", "version": 3}

    assert device_ordinal(Empty()) is None  # no memory: nothing to ask the driver
    assert device_ordinal(np.ones(3)) is None  # NumPy's DLPack device is the CPU: no device array
    assert device_ordinal([1.0]) is None


def test_a_plan_refuses_an_array_of_another_device_before_it_reads_it():
    plan = MapPlan(gpulab.Kernel(twice), (gpulab.element_type("f32"),), H100)
    with pytest.raises(DeviceError, match=r"input 0 lives on cuda:1, but this map was made for cuda:0: make a plan "
                                          r"for cuda:1 \(device='cuda:1'\)"):
        plan.input_fields(OnDevice(1), 0, ())
    with pytest.raises(gpulab.errors.HostArrayError):  # a host array is still the host array error
        plan.input_fields(np.zeros(3, np.float32), 0, ())
