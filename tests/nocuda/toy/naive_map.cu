// ---- A toy primitive: out[i] = f(in[i]), one item per thread -------------------
// What a first CUDA tutorial writes: no vectors, no unrolling. It exists to show
// that a primitive is a registry record and a template (tests/nocuda/test_registry.py).

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
gpulab_naive_map($PARAMS, Output out, index_t n, Uniforms u) {
    const index_t i = (index_t)blockIdx.x * BLOCK_THREADS + threadIdx.x;
    if (i < n) store(out, i, apply($SCALAR_ITEMS, u));
}
