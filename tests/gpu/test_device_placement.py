"""Primitives on an explicit ``cuda:N``: where arrays live, plans refusing another device's arrays, threads,
and benchmarks side by side. Tests marked ``gpus(2)`` need two GPUs and skip with fewer."""

import threading

import numpy as np
import pytest
from operators import add, positive, twice

import gpulab
from gpulab.device import device as find_device
from gpulab.errors import DeviceError
from gpulab.runtime.arrays import device_ordinal

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
GPUS = [d.name for d in gpulab.devices() if d.is_gpu]


def every_primitive(name: str, data):
    """Each primitive's result on ``name``, copied to the host."""
    return {"map": cupy.asnumpy(gpulab.map(twice, data, device=name)),
            "reduce": float(gpulab.reduce(add, data, np.float32(0), device=name)),
            "scan": cupy.asnumpy(gpulab.scan(add, data, device=name)),
            "filter": cupy.asnumpy(gpulab.filter(positive, data, device=name))}


def on(name: str, host: np.ndarray):
    with cupy.cuda.Device(find_device(name).ordinal):
        return cupy.asarray(host)


def sample(n=100_000, seed=0):
    return np.random.default_rng(seed).integers(-50, 50, n).astype(np.float32)


def test_an_out_of_range_gpu_names_the_devices_there():
    with pytest.raises(DeviceError, match=rf"cuda:{len(GPUS)} is out of range: this machine has {len(GPUS)} "
                                          rf"CUDA GPU\(s\) \(devices: host, cuda:0"):
        find_device(f"cuda:{len(GPUS)}")


def test_arrays_say_where_they_live():
    data = on("cuda:0", sample(10))
    assert device_ordinal(data) == 0
    assert device_ordinal(data[::2]) == 0
    assert device_ordinal(gpulab.to_device(np.ones(3), device="cuda:0")) == 0


@pytest.mark.parametrize("name", GPUS)
def test_every_primitive_on_each_gpu_allocates_there_and_agrees_with_the_host(name):
    host = sample()
    data = on(name, host)
    other = "cuda:1" if name == "cuda:0" and len(GPUS) > 1 else name
    with cupy.cuda.Device(find_device(other).ordinal):  # another device current: the plan's device still wins
        out = gpulab.map(twice, data, device=name)
        found = every_primitive(name, data)
    assert device_ordinal(out) == find_device(name).ordinal
    np.testing.assert_array_equal(found["map"], host * 2)
    assert found["reduce"] == host.sum()
    np.testing.assert_array_equal(found["scan"], np.cumsum(host))
    np.testing.assert_array_equal(found["filter"], host[host > 0])


def test_use_switches_where_one_shot_calls_run():
    data = on("cuda:0", sample(1000))
    with gpulab.use("cuda:0"):
        assert device_ordinal(gpulab.map(twice, data)) == 0
    with gpulab.use("host"):
        with pytest.raises(gpulab.errors.HostArrayError, match="runs on the host"):
            gpulab.map(twice, data)


def test_bench_times_a_gpu_beside_the_host_in_one_plot():
    result = gpulab.bench(add, "reduce", [1000, 10_000], devices=[*GPUS, "host"], dtype=np.float32, repeats=3,
                          warmup=1, progress=False)
    assert result.devices() == [*GPUS, "host"]
    figure = result.plot()
    assert len(figure.axes[0].get_lines()) >= len(GPUS) + 1


@pytest.mark.gpus(2)
def test_a_plan_refuses_an_array_of_another_gpu():
    plan = gpulab.make_map(twice, np.float32, device="cuda:0")
    elsewhere = on("cuda:1", sample(1000))
    with pytest.raises(DeviceError, match="input 0 lives on cuda:1, but this map was made for cuda:0"):
        plan(elsewhere)
    with pytest.raises(DeviceError, match="lives on cuda:1"):
        gpulab.reduce(add, elsewhere, np.float32(0), device="cuda:0")
    assert device_ordinal(gpulab.map(twice, elsewhere, device="cuda:1")) == 1


@pytest.mark.gpus(2)
def test_two_threads_each_driving_its_own_gpu():
    hosts = [sample(1_000_000, seed) for seed in (1, 2)]
    found, failures = {}, []

    def drive(name, host):
        try:
            data = on(name, host)
            for _ in range(20):
                found[name] = every_primitive(name, data)
        except Exception as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=drive, args=(f"cuda:{k}", hosts[k])) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    for k, host in enumerate(hosts):
        assert found[f"cuda:{k}"]["reduce"] == host.sum()
        np.testing.assert_array_equal(found[f"cuda:{k}"]["scan"], np.cumsum(host))
        np.testing.assert_array_equal(found[f"cuda:{k}"]["filter"], host[host > 0])
