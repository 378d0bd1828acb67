// ---- Reduce: two passes, every fold in the input's order ---------------------
// One kernel, launched twice. Pass 1 (a grid of G blocks): block b folds the
// b-th contiguous share of the input (whole tiles) into out[b], a partial.
// Pass 2 (one block): folds the G partials in order and puts the initial
// value on the left. Inputs of a few tiles need pass 2 only.

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
gpulab_reduce(Input0 in, index_t n, value_t* out, value_t initial, Uniforms u) {
    auto combine = [&](value_t a, value_t b) { return op(a, b, u); };
    bool has;
    if (gridDim.x == 1) {  // pass 2 (or the only pass): everything, the initial value on the left
        value_t total = block_fold_range(in, 0, n, has, combine);
        if (threadIdx.x == 0) *out = has ? op(initial, total, u) : initial;
        return;
    }
    // Pass 1: block b takes tiles [b * q + min(b, r), ...): q each, one more for the first r.
    const unsigned int tiles = (unsigned int)((n + TILE - 1) / TILE);  // >= gridDim.x
    const unsigned int q = tiles / gridDim.x, r = tiles % gridDim.x;
    const unsigned int first_tile = blockIdx.x * q + min(blockIdx.x, r);
    const index_t begin = (index_t)first_tile * TILE;
    const index_t end = begin + (index_t)(q + (blockIdx.x < r)) * TILE;
    value_t total = block_fold_range(in, begin, end < n ? end : n, has, combine);
    if (threadIdx.x == 0) out[blockIdx.x] = total;
}
